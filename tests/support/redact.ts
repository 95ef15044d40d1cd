/** Keeps keys out of everything the suite writes: attachments, error messages, logs. */
const secrets = new Map<string, string>();

export function registerSecret(value: string | undefined, label: string): void {
  if (value) secrets.set(value, `[${label}]`);
}

export function redact(text: string): string {
  let result = text;
  for (const [secret, label] of secrets) result = result.split(secret).join(label);
  return result;
}

/** `Bearer abc` -> `Bearer [redacted]`: the scheme stays readable, the credential never shows. */
export function redactAuthorization(value: string): string {
  const match = /^(\s*\S+)(\s+)\S/.exec(value);
  return match ? `${match[1]}${match[2]}[redacted]` : '[redacted]';
}
