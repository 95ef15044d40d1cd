/**
 * The two kinds of error the verdict tells apart from a failure of the target, and how their
 * messages are read back from results:
 * - RunError: an error of the run, not a defect of the target (provisioning that failed, a
 *   back-off budget used up, a target that stopped answering, a session teardown could not stop);
 * - KnownDeviation: the failure of a check the target's known-deviations file declares.
 */
export class RunError extends Error {
  /** `status`: the last answer the request got before the run gave up on it (429), where one came. */
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'RunError';
    // The message says everything; a stack trace into the suite would only add noise.
    this.stack = `${this.name}: ${message}`;
  }
}

/**
 * A check that failed the specification and agreed with what the target's known-deviations file
 * declares it does instead (its billing rule): the check turns it into a known deviation.
 */
export class DeclaredBehaviour extends Error {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
    this.name = 'DeclaredBehaviour';
    this.stack = message;
  }
}

export const KNOWN_DEVIATION_PREFIX = 'Known deviation of ';

export class KnownDeviationError extends Error {
  constructor(message: string) {
    super(`${KNOWN_DEVIATION_PREFIX}${message}`);
    this.name = 'KnownDeviation';
    this.stack = this.message;
  }
}

/** A message without terminal colours. */
export function plain(message: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape that starts a terminal colour
  return message.replace(/\u001b\[[0-9;]*m/g, '');
}

/** The first non-empty line of a message, without terminal colours. */
export function firstLine(message: string | undefined): string | undefined {
  return message === undefined
    ? undefined
    : plain(message)
        .split('\n')
        .find((line) => line.trim())
        ?.trim();
}

/** Whether a result's error is an error of the run: a RunError, a test past its timeout, a crashed worker. */
export function isRunError(message: string): boolean {
  const line = firstLine(message) ?? '';
  return (
    /^(Error: )?RunError: /.test(line) ||
    /^Test timeout of \d+ms exceeded/.test(line) ||
    /^Tearing down "[^"]+" exceeded the test timeout of \d+ms/.test(line) ||
    /^Error: worker process exited unexpectedly/.test(line)
  );
}

/** Whether a result's error is a declared deviation's: its own message begins so, never an answer's text. */
export function isKnownDeviation(message: string): boolean {
  return /^(KnownDeviation: )?Known deviation of /.test(firstLine(message) ?? '');
}

/** Why a target did not answer the check before the run; an https address on a plain HTTP port says so, since its TLS error does not. */
export function whyUnreachable(baseURL: string, error: NodeJS.ErrnoException): string {
  const why = error.code ?? error.message;
  if (baseURL.startsWith('https:') && /WRONG_VERSION_NUMBER|wrong version number|PACKET_LENGTH_TOO_LONG/i.test(`${error.code} ${error.message}`)) {
    const http = baseURL.replace(/^https:/, 'http:');
    return `The target ${baseURL} answered plain HTTP, not https (${why}): if that is the address meant, use ${http} in BASE_URL (off loopback, only with ALLOW_INSECURE_HTTP=1 on a network you trust).`;
  }
  return `The target ${baseURL} is unreachable (${why}).`;
}

/** The last answer's status of a request that ended in an error of the run, where it had one. */
export const lastStatusOf = (error: unknown): number | undefined => (error instanceof RunError ? error.status : undefined);
