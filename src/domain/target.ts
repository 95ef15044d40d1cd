/**
 * The target and the identities that call it. An external target's keys come from the settings;
 * the embedded reference's from fixtures/teams.json. Every key, and every near-miss form of the
 * owner's key, is registered for redaction before any request is sent.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { registerSecret } from '../http/redact';
import { RunError } from '../config/errors';
import type { Settings } from '../config/settings';

export interface Target {
  baseURL: string;
  /** A reference the suite started itself: its keys are those of fixtures/teams.json. */
  embedded: boolean;
}

export interface Identity {
  name: string;
  /** The full `Authorization` value, or undefined to send no such header. */
  authorization?: string;
  /** Only the owner's answers settle a session in the ledger. */
  owner?: true;
  /** The team whose rate limit a request with a valid key counts against (the back-off queue is per team). */
  team?: string;
  /**
   * Carries no valid key. A 429 to such a request is its refusal (a keyless tier over its quota),
   * not a wait: the client takes it as the answer instead of backing off.
   */
  withoutValidKey?: true;
}

export const TEAMS_FILE = path.join(__dirname, '..', '..', 'fixtures', 'teams.json');

interface Team {
  id: string;
  name: string;
  keys: string[];
}

export function targetFrom(settings: Settings): Target {
  if (!settings.baseURL) throw new RunError('No target: the embedded reference was not started (run the suite through playwright.config.ts).');
  return { baseURL: settings.baseURL, embedded: settings.embedded };
}

interface Keys {
  apiKey: string;
  foreignApiKey: string;
  burstApiKey?: string;
  /** What else is known of the owner team and of the burst team (for the embedded reference: ids and names). */
  ownerTeam: string[];
  burstTeam: string[];
}

/** The owner's, the foreign team's and, when there is one, the burst team's keys. */
export function keysOf(target: Target, settings: Settings): Keys {
  if (!target.embedded) return { apiKey: settings.apiKey!, foreignApiKey: settings.foreignApiKey!, burstApiKey: settings.burstApiKey, ownerTeam: [], burstTeam: [] };
  const [owner, foreign, burst] = (JSON.parse(readFileSync(TEAMS_FILE, 'utf8')) as { teams: Team[] }).teams;
  return { apiKey: owner.keys[0], foreignApiKey: foreign.keys[0], burstApiKey: burst?.keys[0], ownerTeam: [owner.id, owner.name], burstTeam: burst ? [burst.id, burst.name] : [] };
}

/** Whether the burst has a team of its own (the embedded reference's third team, or BURST_API_KEY). */
export function burstHasOwnTeam(settings: Settings): boolean {
  return keysOf({ baseURL: settings.baseURL ?? '', embedded: settings.embedded }, settings).burstApiKey !== undefined;
}

/** The owner's key with the case of every letter swapped, or undefined when it has no letter. */
export function caseChanged(key: string): string | undefined {
  const swapped = [...key].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');
  return swapped === key ? undefined : swapped;
}

export type IdentityName =
  | 'owner' | 'foreign' | 'noKey' | 'emptyToken' | 'garbage' | 'unknownKey'
  | 'keyCaseChanged' | 'keyExtended' | 'keyTruncated' | 'basicScheme' | 'tokenScheme' | 'lowerCaseBearer';

/**
 * Every caller the suite plays, and what is known of the owner team (for the embedded reference:
 * its id and name). `burst`, when there is a third team, owns the sessions of the rate-limit burst.
 */
export type Identities = Record<IdentityName, Identity> & { burst?: Identity; ownerTeam: string[]; burstTeam: string[] };

/**
 * Registers every key, and the near-miss forms of the owner's key the suite sends, for redaction:
 * in the workers before any request, and in the runner before any report. Returns those forms.
 */
export function registerKeys(target: Target, settings: Settings) {
  const { apiKey, foreignApiKey, burstApiKey } = keysOf(target, settings);
  const nearMisses = { caseChanged: caseChanged(apiKey), extended: `${apiKey}Zz9`, truncated: apiKey.slice(0, -1) };
  registerSecret(apiKey, 'API_KEY');
  registerSecret(foreignApiKey, 'FOREIGN_API_KEY');
  if (burstApiKey) registerSecret(burstApiKey, 'BURST_API_KEY');
  for (const form of Object.values(nearMisses)) registerSecret(form, 'NEAR_API_KEY');
  return nearMisses;
}

export function identitiesFor(target: Target, settings: Settings): Identities {
  const { apiKey, foreignApiKey, burstApiKey, ownerTeam, burstTeam } = keysOf(target, settings);
  const nearMisses = registerKeys(target, settings);
  const bearer = (key: string | undefined) => (key === undefined ? undefined : `Bearer ${key}`);
  // Where the target is declared to ignore the scheme word, the owner's key under another one is the owner's: its limit, its turns.
  const schemeWord = settings.declaredSchemeWord ? { team: 'owner' } : { withoutValidKey: true as const };
  return {
    owner: { name: 'owner team', authorization: `Bearer ${apiKey}`, owner: true as const, team: 'owner' },
    foreign: { name: 'foreign team', authorization: `Bearer ${foreignApiKey}`, team: 'foreign' },
    noKey: { name: 'no Authorization header', withoutValidKey: true },
    emptyToken: { name: 'Bearer with no token', authorization: 'Bearer ', withoutValidKey: true },
    garbage: { name: 'garbage credential', authorization: 'garbage%%not-a-credential', withoutValidKey: true },
    unknownKey: { name: 'unknown well-formed key', authorization: `Bearer fc-${randomBytes(16).toString('hex')}`, withoutValidKey: true },
    keyCaseChanged: { name: "owner's key with its case changed", authorization: bearer(nearMisses.caseChanged), withoutValidKey: true },
    keyExtended: { name: "owner's key with characters appended", authorization: bearer(nearMisses.extended), withoutValidKey: true },
    keyTruncated: { name: "owner's key without its last character", authorization: bearer(nearMisses.truncated), withoutValidKey: true },
    basicScheme: { name: "owner's key under Basic", authorization: `Basic ${apiKey}`, ...schemeWord },
    tokenScheme: { name: "owner's key under Token", authorization: `Token ${apiKey}`, ...schemeWord },
    lowerCaseBearer: { name: "owner's key under lower-case bearer", authorization: `bearer ${apiKey}`, team: 'owner' },
    ...(burstApiKey ? { burst: { name: 'burst team', authorization: `Bearer ${burstApiKey}`, owner: true as const, team: 'burst' } } : {}),
    ownerTeam,
    burstTeam,
  };
}
