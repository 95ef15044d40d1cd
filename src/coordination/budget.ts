/**
 * The run's budget of sessions on a target, shared by its workers: a session taken is a file of its
 * own in the run's working folder, kept while the folder holds no more files than the budget; one
 * that opened nothing is given back by removing it.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { channel } from './run-folder';

/** The run's sessions on one target (the variant matrix serves many targets from one run). */
const folderOf = (reportsDir: string, targetKey: string) => path.join(channel(reportsDir, 'budget'), targetKey);

/** Takes one session of the budget (kept in `shared`, where several runs share it): the ticket to give it back with, or undefined once it is spent. */
export function takeSession(reportsDir: string, targetKey: string, budget: number, shared?: string): string | undefined {
  const folder = shared ? path.join(shared, targetKey) : folderOf(reportsDir, targetKey);
  mkdirSync(folder, { recursive: true });
  const ticket = path.join(folder, randomUUID());
  writeFileSync(ticket, '');
  // Two workers taking the last one at once may both give theirs back: never one too many.
  if (readdirSync(folder).length <= budget) return ticket;
  rmSync(ticket, { force: true });
  return undefined;
}

/** Gives back a session that opened nothing. */
export function giveBack(ticket: string): void {
  rmSync(ticket, { force: true });
}

/** How many sessions of the budget are left. */
export function sessionsLeft(reportsDir: string, targetKey: string, budget: number, shared?: string): number {
  const folder = shared ? path.join(shared, targetKey) : folderOf(reportsDir, targetKey);
  mkdirSync(folder, { recursive: true });
  return Math.max(0, budget - readdirSync(folder).length);
}
