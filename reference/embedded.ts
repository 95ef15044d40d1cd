/**
 * Global setup of a suite run without BASE_URL: starts the reference on an ephemeral port and
 * hands its address to the settings loader. Its teardown, run after the suite's own, checks from
 * the server's side that no session was left running.
 */
import { EMBEDDED_URL_VARIABLE } from '../tests/support/settings';
import { createReferenceServer } from './server';

export default async function startEmbeddedReference() {
  const reference = await createReferenceServer();
  process.env[EMBEDDED_URL_VARIABLE] = reference.url;
  return async () => {
    const left = reference.activeSessions().length;
    await reference.close();
    if (left) throw new Error(`RunError: the suite left ${left} session(s) running on the embedded reference.`);
  };
}
