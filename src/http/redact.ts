/**
 * Keeps keys out of everything the suite writes: attachments, error messages, the ledger, logs.
 * Each registered key is redacted in its raw, JSON-escaped, URL-encoded and base64 forms.
 */
const forms = new Map<string, string>();
/** Longest first, so that a key's extended form is not left half redacted. */
let ordered: [string, string][] = [];

/** The forms in which a key can travel inside a text: raw, escaped, encoded, and base64 at each byte alignment. */
function formsOf(secret: string): string[] {
  const base64 = [0, 1, 2].map((offset) => {
    const encoded = Buffer.from('x'.repeat(offset) + secret).toString('base64');
    // Only the characters of whole 3-byte groups that hold key bytes alone.
    return encoded.slice(offset ? 4 : 0, -4);
  });
  return [secret, JSON.stringify(secret).slice(1, -1), secret.replace(/\//g, '\\/'), encodeURIComponent(secret), ...base64].filter((form) => form.length >= 6);
}

/** Each label's first key, raw: for what a refusal must not quote of it. */
const keysByLabel = new Map<string, string>();

export function registerSecret(value: string | undefined, label: string): void {
  if (!value) return;
  if (!keysByLabel.has(label)) keysByLabel.set(label, value), (pieces = undefined);
  for (const form of formsOf(value)) if (!forms.has(form)) forms.set(form, `[${label}]`);
  ordered = [...forms].sort(([a], [b]) => b.length - a.length);
}

export function redact(text: string): string {
  let result = text;
  for (const [form, label] of ordered) {
    if (result.includes(form)) result = result.split(form).join(label);
  }
  // A target that quotes part of the owner's key: that part is a secret too.
  for (const piece of ownerKeyPieces()) if (result.includes(piece)) result = result.split(piece).join(PIECE_LABEL);
  return result;
}

/** `Bearer abc` -> `Bearer [redacted]`: the scheme stays readable, the credential never shows. */
export function redactAuthorization(value: string): string {
  const match = /^(\s*\S+)(\s+)\S/.exec(value);
  return match ? `${match[1]}${match[2]}[redacted]` : '[redacted]';
}

/** Answer headers as attached: credentials a server hands out or asks for are never shown. */
export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (name === 'set-cookie' || name === 'authorization' || name === 'proxy-authorization' || name === 'cookie') shown[name] = '[redacted]';
    else if (name === 'www-authenticate' || name === 'proxy-authenticate') shown[name] = value.replace(/^(\s*\S+).*$/s, '$1 [parameters redacted]');
    else shown[name] = redact(value);
  }
  return shown;
}

/** What stands for a piece of the owner's key once redacted. */
const PIECE_LABEL = '[part of API_KEY]';

/** Whether a redacted text quoted the owner's key, whole or 10 characters of it in a row. */
export const quotesOwnerKey = (text: string) => text.includes('[API_KEY]') || text.includes(PIECE_LABEL);
const PIECE = 10;
let pieces: string[] | undefined;

/** Runs of 10 characters of the owner's key (API_KEY) that no other team's key holds, once another team's key is known. */
function ownerKeyPieces(): string[] {
  if (pieces) return pieces;
  // Without another team's key, what is the owner's own is not known: a key's common parts ("fc-") are not secrets.
  const key = keysByLabel.has('FOREIGN_API_KEY') ? (keysByLabel.get('API_KEY') ?? '') : '';
  const others = ['FOREIGN_API_KEY', 'BURST_API_KEY'].map((label) => keysByLabel.get(label) ?? '');
  pieces = Array.from({ length: Math.max(0, key.length - PIECE + 1) }, (_, from) => key.slice(from, from + PIECE)).filter(
    (piece) => !others.some((other) => other.includes(piece)),
  );
  return pieces;
}
