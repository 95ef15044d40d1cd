/** Stopping what a run left open: the global teardown's and `cleanup`'s stops, each tried hard within bounds. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Settings } from '../config/settings';
import { Coordination } from '../coordination/coordination';
import { type Answer, type Client, createClient } from './client';
import type { Ledger } from './ledger';
import { type Identity, identitiesFor } from './target';

/**
 * Stops, as the team that created it, every session the ledger holds open and `include` selects: for
 * the global teardown and `npm run cleanup`. An external target's sessions need its key, so only
 * those of the configured BASE_URL can be stopped.
 */
export async function stopOpenSessions(ledger: Ledger, settings: Settings, include: (entry: ReturnType<Ledger['open']>[number]) => boolean = () => true) {
  const stopped: string[] = [];
  const failed: string[] = [];
  // All at once, as a test's teardown does.
  await Promise.all(
    ledger
      .open()
      .filter(include)
      .map(async (entry) => {
        const label = `${entry.jobId} at ${entry.target}${entry.test ? ` (test ${entry.test})` : ''}`;
        if (!entry.embedded && entry.target !== settings.baseURL) {
          failed.push(`${label}: another target; run the cleanup with BASE_URL=${entry.target} and its owner's API_KEY`);
          return;
        }
        const target = { baseURL: entry.target, embedded: entry.embedded };
        const identities = identitiesFor(target, settings);
        const owner = [identities.owner, identities.burst, identities.foreign].find((identity) => identity?.name === entry.identity);
        if (!owner) {
          failed.push(
            `${label}: created by the ${entry.identity}, whose key was not given${entry.identity === 'burst team' ? '; run the cleanup with BURST_API_KEY too' : ''}`,
          );
          return;
        }
        // A job whose interacts were all refused gets one stop (a target may open what it refuses), not waited for nor reported as perhaps running.
        const once = ledger.heldNothing(entry.target, entry.jobId);
        const problem = await stopAsOwner(
          createClient({ target, settings, ledger, coordination: new Coordination(settings.reportsDir, target.baseURL, settings.rateLimit) }),
          owner,
          entry.jobId,
          { once },
        );
        if (problem && !once) failed.push(`${label}: running since ${entry.at}; ${problem}`);
        else stopped.push(label);
      }),
  );
  return { stopped: stopped.sort(), failed: failed.sort() };
}

/** How often a stop that answers 5xx is tried during cleanup, and the pause before the next try: a faulty target must not hold up the end of the run. */
export const CLEANUP_TRIES_ON_5XX = 3;
const CLEANUP_PAUSE_MS = 500;

/**
 * One owner's stop that tries hard, within bounds: 429 is backed off by the client (within the
 * run's back-off budget), a 5xx is tried again CLEANUP_TRIES_ON_5XX times in all. Returns why the
 * session could not be stopped, or undefined once it is gone.
 */
export async function stopAsOwner(client: Client, owner: Identity, jobId: string, { once = false } = {}): Promise<string | undefined> {
  for (let attempt = 1; ; attempt++) {
    let stop: Answer;
    try {
      // Once: a single try, still paced under the team's rate, so that it takes no place the run planned for others.
      stop = await client.stop(jobId, owner, once ? { giveUpOn429: async () => true } : {});
    } catch (error) {
      return (error as Error).message;
    }
    if (stop.status === 200 || stop.status === 404) return undefined;
    if (stop.status < 500 || once || attempt >= CLEANUP_TRIES_ON_5XX) return `the stop answered ${stop.status}${attempt > 1 ? `, ${attempt} times` : ''}`;
    await sleep(CLEANUP_PAUSE_MS * attempt);
  }
}
