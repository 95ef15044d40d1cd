/**
 * An error of the run, not a defect of the target: provisioning that failed, a back-off budget
 * used up, a target that stopped answering, a session teardown could not stop. The verdict
 * counts these apart from failures (exit code 2).
 */
export class RunError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunError';
    // The message says everything; a stack trace into the suite would only add noise.
    this.stack = `${this.name}: ${message}`;
  }
}

export const RUN_ERROR_PREFIX = 'RunError: ';
