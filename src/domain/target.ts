/**
 * The target and the identities that call it. An external target's keys come from the settings;
 * the embedded reference's from fixtures/teams.json. Every key, and every near-miss form of the
 * owner's key, is registered for redaction before any request is sent.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RunError } from '../config/errors';
import type { Settings } from '../config/settings';
import { registerSecret } from '../http/redact';
import { callersFor, type Identity, type IdentityName, nearMissesOf } from './callers';

export { caseChanged, type Identity, type IdentityName } from './callers';

export interface Target {
  baseURL: string;
  /** A reference the suite started itself: its keys are those of fixtures/teams.json. */
  embedded: boolean;
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
  if (!target.embedded)
    return { apiKey: settings.apiKey!, foreignApiKey: settings.foreignApiKey!, burstApiKey: settings.burstApiKey, ownerTeam: [], burstTeam: [] };
  const [owner, foreign, burst] = (JSON.parse(readFileSync(TEAMS_FILE, 'utf8')) as { teams: Team[] }).teams;
  return {
    apiKey: owner.keys[0],
    foreignApiKey: foreign.keys[0],
    burstApiKey: burst?.keys[0],
    ownerTeam: [owner.id, owner.name],
    burstTeam: burst ? [burst.id, burst.name] : [],
  };
}

/** Whether the burst has a team of its own (the embedded reference's third team, or BURST_API_KEY). */
export function burstHasOwnTeam(settings: Settings): boolean {
  return keysOf({ baseURL: settings.baseURL ?? '', embedded: settings.embedded }, settings).burstApiKey !== undefined;
}

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
  const nearMisses = nearMissesOf(apiKey);
  registerSecret(apiKey, 'API_KEY');
  registerSecret(foreignApiKey, 'FOREIGN_API_KEY');
  if (burstApiKey) registerSecret(burstApiKey, 'BURST_API_KEY');
  for (const form of Object.values(nearMisses)) registerSecret(form, 'NEAR_API_KEY');
  return nearMisses;
}

export function identitiesFor(target: Target, settings: Settings): Identities {
  const { apiKey, foreignApiKey, burstApiKey, ownerTeam, burstTeam } = keysOf(target, settings);
  const nearMisses = registerKeys(target, settings);
  const callers = callersFor({ apiKey, foreignApiKey, burstApiKey }, nearMisses, settings.declaredSchemeWord !== undefined);
  return { ...callers, ownerTeam, burstTeam };
}
