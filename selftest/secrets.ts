/**
 * Finds the fixture teams' keys in files or text that a run wrote: each key, its near-miss forms
 * (the authentication rule sends the owner's key with its case changed, extended and truncated),
 * and their JSON-escaped, URL-encoded and base64 forms. Written apart from the suite's redaction,
 * so that a gap in one is not hidden by the same gap in the other.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { loadTeams } from '../reference/server';

export const SECRETS = loadTeams().flatMap((team) => team.keys);

const swapCase = (text: string) => [...text].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');

export function needles(secrets: string[]): string[] {
  return secrets
    .flatMap((secret) => [secret, secret.slice(0, -1), swapCase(secret)])
    .flatMap((form) => [
      form,
      JSON.stringify(form).slice(1, -1),
      encodeURIComponent(form),
      // base64 at the three byte alignments: the characters of whole 3-byte groups that hold only key bytes
      ...[0, 1, 2].map((offset) =>
        Buffer.from('x'.repeat(offset) + form)
          .toString('base64')
          .slice(offset ? 4 : 0, -4),
      ),
    ]);
}

/** Files under `target` (or the text itself, when it is not a path) that contain a key; '<text>' for text. */
export function filesContaining(target: string, secrets = SECRETS): string[] {
  const forms = [...new Set(needles(secrets))];
  if (!existsSync(target) || target.includes('\n')) return forms.some((form) => target.includes(form)) ? ['<text>'] : [];
  const hits: string[] = [];
  const visit = (file: string) => {
    if (statSync(file).isDirectory()) {
      for (const name of readdirSync(file)) visit(path.join(file, name));
      return;
    }
    const content = readFileSync(file);
    const texts = [content.toString('utf8'), content.toString('latin1')];
    if (forms.some((form) => texts.some((text) => text.includes(form)))) hits.push(file);
  };
  visit(target);
  return hits;
}
