/** Finds the fixture teams' keys in files or text that a run wrote. */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { loadTeams } from '../reference/server';

export const SECRETS = loadTeams().flatMap((team) => team.keys);

/**
 * Each key, plus its base64 forms at the three byte alignments (attachments are base64 inside
 * JSON reports): the characters of whole 3-byte groups that hold only key bytes.
 */
function needles(secrets: string[]): string[] {
  return secrets.flatMap((secret) => [
    secret,
    ...[0, 1, 2].map((offset) => {
      const encoded = Buffer.from('x'.repeat(offset) + secret).toString('base64');
      return encoded.slice(offset ? 4 : 0, -4);
    }),
  ]);
}

/** Files under `target` (or the text itself, when it is not a path) that contain a key; '<text>' for text. */
export function filesContaining(target: string, secrets = SECRETS): string[] {
  if (!existsSync(target) || target.includes('\n')) return secrets.some((secret) => target.includes(secret)) ? ['<text>'] : [];
  const hits: string[] = [];
  const visit = (file: string) => {
    if (statSync(file).isDirectory()) return readdirSync(file).forEach((name) => visit(path.join(file, name)));
    const content = readFileSync(file);
    const texts = [content.toString('utf8'), content.toString('latin1')];
    if (needles(secrets).some((needle) => texts.some((text) => text.includes(needle)))) hits.push(file);
  };
  visit(target);
  return hits;
}
