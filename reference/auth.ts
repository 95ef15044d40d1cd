/**
 * Reads the API key from an `Authorization` header: `Bearer <key>`, scheme case-insensitive
 * (RFC 9110 §11.1), any run of spaces or tabs around the token. Returns undefined for a
 * missing header, another scheme, an empty token or a token with inner white space.
 */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^[ \t]*bearer[ \t]+([^ \t]+)[ \t]*$/i.exec(header);
  return match?.[1];
}
