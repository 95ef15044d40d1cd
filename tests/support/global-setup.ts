/**
 * Validates the configuration and, when no BASE_URL is set, starts the embedded reference on an
 * ephemeral port for the whole run. Its teardown fails the run if any session was left running.
 */
import { checkReachable, ConfigurationError, readSettingsOrExit } from './config';
import { createReferenceServer } from '../../reference/server';

export default async function globalSetup() {
  const settings = readSettingsOrExit();
  if (settings.baseURL) {
    try {
      await checkReachable(settings.baseURL, settings.requestTimeoutMs);
    } catch (error) {
      console.error((error as ConfigurationError).message);
      process.exit(2);
    }
    return;
  }
  const reference = await createReferenceServer();
  process.env.CONFORMANCE_EMBEDDED_URL = reference.url;
  return async () => {
    const leaked = reference.activeSessions().length;
    await reference.close();
    if (leaked) throw new Error(`The suite left ${leaked} session(s) running on the embedded reference.`);
  };
}
