/**
 * What the library records for the report without knowing the test runner: steps, notes, and
 * the end of a test that could not establish its fact. The Playwright glue
 * installs the runner's recorder (src/playwright/recorder.ts); outside a test, steps just run.
 */
export interface Recorder {
  step<T>(title: string, body: () => T | Promise<T>, options?: { box?: boolean }): Promise<T>;
  annotate(type: string, description: string): void;
  /** Ends the test as skipped, with `reason`. */
  skip(reason: string): never;
  attach(name: string, body: string, contentType: string): Promise<void>;
  /** A wait of its own on top of the test's timeout. */
  extendTimeout(ms: number): void;
}

let current: Recorder = {
  step: async (_title, body) => body(),
  annotate: () => {},
  skip: (reason) => {
    throw new Error(reason);
  },
  attach: async () => {},
  extendTimeout: () => {},
};

export function useRecorder(recorder: Recorder): void {
  current = recorder;
}

export const step = <T>(title: string, body: () => T | Promise<T>, options?: { box?: boolean }): Promise<T> => current.step(title, body, options);
export const annotate = (type: string, description: string): void => current.annotate(type, description);
export const note = (description: string): void => current.annotate('note', description);
export const skip = (reason: string): never => current.skip(reason);
export const attach = (name: string, body: string, contentType = 'application/json'): Promise<void> => current.attach(name, body, contentType);
export const extendTimeout = (ms: number): void => current.extendTimeout(ms);
