/** Starts one server for the throughput benchmark and prints its URL: `reference` or `bare`. */
import http from 'node:http';
import { createReferenceServer } from '../reference/server';

const kind = process.argv[2];
if (kind === 'reference') {
  createReferenceServer({ rateLimit: { limit: Number(process.argv[3] ?? 1e9), windowMs: 1000 } }).then((server) => console.log(server.url));
} else {
  // The same JSON answers, with no routing, authentication or rate limiting.
  const notFound = JSON.stringify({ success: false, error: 'Browser session not found.' });
  const unauthorized = JSON.stringify({ success: false, error: 'Unauthorized' });
  const server = http.createServer((req, res) => {
    const body = req.headers.authorization ? notFound : unauthorized;
    res.writeHead(req.headers.authorization ? 404 : 401, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () => console.log(`http://127.0.0.1:${(server.address() as { port: number }).port}`));
}
