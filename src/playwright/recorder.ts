/** Installs Playwright's recorder (src/checks/recorder.ts): steps and notes of the running test. */
import { test } from '@playwright/test';
import { useRecorder } from '../checks/recorder';

useRecorder({
  step: (title, body, options) => test.step(title, async () => body(), options),
  annotate: (type, description) => void test.info().annotations.push({ type, description }),
  skip: (reason) => {
    test.skip(true, reason);
    throw new Error('unreachable: test.skip ends the test');
  },
  attach: (name, body, contentType) => test.info().attach(name, { body, contentType }),
  extendTimeout: (ms) => test.info().setTimeout(test.info().timeout + ms),
});
