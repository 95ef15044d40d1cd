import { createReferenceServer } from './server';

const port = Number(process.env.PORT ?? 3002);
createReferenceServer({ port, log: (line) => console.log(`${new Date().toISOString()} ${line}`) }).then(
  (server) => {
    console.log(`Reference server listening on ${server.url} (teams from fixtures/teams.json)`);
    const stop = () => server.close().then(() => process.exit(0));
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  },
  (error: Error) => {
    console.error(`Reference server could not start: ${error.message}`);
    process.exit(2);
  },
);
