/**
 * The callers the suite plays, built from the keys alone: the owner, the foreign team, the burst
 * team, and every form of a missing, invalid or near-miss key. The run and its reproductions
 * build them the same way.
 */
import { randomBytes } from 'node:crypto';

export interface Identity {
  name: string;
  /** Which of the suite's callers it is (an IdentityName, or `burst`): how a reproduction names it without its key. */
  role?: string;
  /** The full `Authorization` value, or undefined to send no such header. */
  authorization?: string;
  /** The header's name as sent: `Authorization`, as the specification writes it, unless a test sends it otherwise. */
  header?: string;
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

export type IdentityName =
  | 'owner'
  | 'foreign'
  | 'noKey'
  | 'emptyToken'
  | 'garbage'
  | 'unknownKey'
  | 'keyCaseChanged'
  | 'keyExtended'
  | 'keyTruncated'
  | 'basicScheme'
  | 'tokenScheme'
  | 'lowerCaseBearer'
  | 'lowerCaseHeader'
  | 'lowerCaseBoth';

/** The owner's key with the case of every letter swapped, or undefined when it has no letter. */
export function caseChanged(key: string): string | undefined {
  const swapped = [...key].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');
  return swapped === key ? undefined : swapped;
}

/** The near-miss forms of the owner's key the suite sends. */
export function nearMissesOf(apiKey: string) {
  return { caseChanged: caseChanged(apiKey), extended: `${apiKey}Zz9`, truncated: apiKey.slice(0, -1) };
}

/** Every caller, each with its role. `schemeWordIgnored`: the target's file declares the owner's key under any scheme word the owner's. */
export function callersFor(
  { apiKey, foreignApiKey, burstApiKey }: { apiKey: string; foreignApiKey: string; burstApiKey?: string },
  nearMisses: ReturnType<typeof nearMissesOf>,
  schemeWordIgnored: boolean,
): Record<IdentityName, Identity> & { burst?: Identity } {
  const bearer = (key: string | undefined) => (key === undefined ? undefined : `Bearer ${key}`);
  // Where the target is declared to ignore the scheme word, the owner's key under another one is the owner's: its limit, its turns.
  const schemeWord = schemeWordIgnored ? { team: 'owner' } : { withoutValidKey: true as const };
  const callers: Record<IdentityName, Identity> & { burst?: Identity } = {
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
    lowerCaseHeader: { name: "owner's key under a lower-case header name", authorization: `Bearer ${apiKey}`, header: 'authorization', team: 'owner' },
    lowerCaseBoth: { name: "owner's key under lower-case header name and bearer", authorization: `bearer ${apiKey}`, header: 'authorization', team: 'owner' },
    ...(burstApiKey ? { burst: { name: 'burst team', authorization: `Bearer ${burstApiKey}`, owner: true as const, team: 'burst' } } : {}),
  };
  for (const [role, identity] of Object.entries(callers)) identity.role = role;
  return callers;
}
