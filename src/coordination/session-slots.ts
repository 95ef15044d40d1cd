/**
 * What the run knows of a target's cap on each team's live sessions, shared by its workers (as the
 * back-off turns are). A test takes, before it provisions anything, as many slots as it needs
 * sessions at once, all together: so that no test holds a session while it waits for another it
 * cannot get. Slots are unbounded until the cap is known: stated up front (SESSION_CAP), or learnt
 * when an interact that would open a session is refused with 429 while the team's limiter has room
 * (a stop of an unknown job just after it is not refused): the cap is then at most the sessions the
 * run may have held live for that team while it was refused (the ledger's times; a later refusal
 * can lower it). A folder per target and team under the run folder's `sessions/` (run-folder.ts); files of processes
 * that ended are ignored.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { RunError } from '../config/errors';
import { locked } from './file-lock';
import { alive, channel, writeMaking } from './run-folder';

let taken = 0;
const POLL_MS = 50;
const CAP_FILE = 'cap.json';

/** The caps the run learnt, per team, from the run folder's `sessions/`: for the summary. */
export function learntCaps(sessionsDir: string): { team: string; cap: number }[] {
  if (!existsSync(sessionsDir)) return [];
  return readdirSync(sessionsDir).flatMap((folder) => {
    try {
      return [JSON.parse(readFileSync(path.join(sessionsDir, folder, CAP_FILE), 'utf8'))];
    } catch {
      return [];
    }
  });
}

export class SessionSlots {
  private readonly dir: string;
  private readonly held: string[] = [];

  constructor(
    reportsDir: string,
    baseURL: string,
    private readonly team: string,
    private readonly stated?: number,
  ) {
    this.dir = path.join(channel(reportsDir, 'sessions'), createHash('sha1').update(`${baseURL}\n${team}`).digest('hex').slice(0, 12));
  }

  /** The cap on live sessions as the run knows it: stated, learnt, or undefined (none met yet). */
  cap(): number | undefined {
    return this.stated ?? this.read()?.cap;
  }

  /**
   * Takes `count` slots at once, waiting (until `deadline`) while the run holds too many. Returns
   * how many it took: fewer than asked when the cap is below `count`, never 0 unless the cap is 0.
   */
  async take(count: number, deadline: number, signal: AbortSignal): Promise<number> {
    for (;;) {
      const cap = this.cap();
      const wanted = Math.min(count, cap ?? count);
      if (wanted === 0) return 0;
      // No cap known yet: nothing to check, and the slots only count once one is learnt.
      const took =
        cap === undefined
          ? (this.write(wanted), true)
          : this.locked(() => {
              if (this.slotsInUse() + wanted > cap) return false;
              this.write(wanted);
              return true;
            });
      if (took) return wanted;
      if (performance.now() > deadline)
        throw new RunError(
          `no room for ${wanted} live session(s) under the target's cap of ${cap} per team: the run's other tests held them longer than a test lasts (TEST_TIMEOUT_MS)`,
        );
      await sleep(POLL_MS, undefined, { signal });
    }
  }

  /** Gives back every slot this holder took. */
  release(): void {
    for (const name of this.held.splice(0)) {
      try {
        unlinkSync(path.join(this.dir, name));
      } catch {
        // already gone
      }
    }
  }

  private write(count: number): void {
    for (let slot = 0; slot < count; slot++) {
      const name = `slot-${process.pid}-${++taken}`;
      writeMaking(path.join(this.dir, name));
      this.held.push(name);
    }
  }

  /** What a 429 to an interact that would open a session, with the limiter's room shown, teaches: the cap is at most `live`. */
  learn(live: number, inWords?: number): number {
    return this.locked(() => {
      const cap = Math.min(live, this.cap() ?? Infinity);
      writeFileSync(path.join(this.dir, CAP_FILE), JSON.stringify({ team: this.team, cap, inWords: inWords ?? this.read()?.inWords }));
      return cap;
    });
  }

  /** The cap stated up front, or in the words of the target's refusals: the number the target claims, not one the run inferred. */
  statedCap(): number | undefined {
    return this.stated ?? this.capInWords();
  }

  /** The cap the target's own refusals state, whatever the user stated. */
  capInWords(): number | undefined {
    return this.read()?.inWords;
  }

  private read(): { cap: number; inWords?: number } | undefined {
    try {
      return JSON.parse(readFileSync(path.join(this.dir, CAP_FILE), 'utf8'));
    } catch {
      return undefined;
    }
  }

  private slotsInUse(): number {
    return readdirSync(this.dir).filter((name) => name.startsWith('slot-') && alive(Number(name.split('-')[1]))).length;
  }

  private locked<T>(body: () => T): T {
    return locked(this.dir, body);
  }
}
