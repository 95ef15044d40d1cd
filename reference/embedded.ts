/**
 * Global setup of a suite run without BASE_URL: starts the reference on an ephemeral port, in a
 * process of its own (the runner's event loop, busy starting workers, would otherwise delay its
 * answers and widen the intervals the billing checks measure), and hands its address to the
 * settings loader. Its teardown, run after the suite's own, checks from the server's side that no
 * session was left running.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { EMBEDDED_URL_VARIABLE } from '../src/config/settings';
import { createReferenceServer } from './server';

type Message = { url: string } | { left: number };

export default async function startEmbeddedReference() {
  const child = fork(__filename, ['--serve'], { execArgv: ['--require', require.resolve('tsx/cjs')], stdio: 'inherit' });
  const [started] = (await once(child, 'message')) as [{ url: string }];
  process.env[EMBEDDED_URL_VARIABLE] = started.url;
  return async () => {
    child.send('close');
    const [{ left }] = (await once(child, 'message')) as [{ left: number }];
    if (left) throw new Error(`RunError: the suite left ${left} session(s) running on the embedded reference.`);
  };
}

if (require.main === module && process.argv.includes('--serve')) {
  createReferenceServer().then((server) => {
    process.send!({ url: server.url } satisfies Message);
    process.once('message', async () => {
      const left = server.activeSessions().length;
      await server.close();
      process.send!({ left } satisfies Message, () => process.exit(0));
    });
    process.once('disconnect', () => process.exit(0));
  });
}
