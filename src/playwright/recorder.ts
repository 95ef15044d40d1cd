/** Installs Playwright's recorder (src/checks/recorder.ts): steps and notes of the running test. */
import { test } from '@playwright/test';
import { useRecorder } from '../checks/recorder';

useRecorder({
  // At the test's own location: a stack captured and source-mapped for each step costs more than most steps take.
  step: (title, body, options) => {
    const { file, line, column } = test.info();
    return test.step(title, async () => body(), { ...options, location: { file, line, column } });
  },
  annotate: (type, description) => void test.info().annotations.push({ type, description }),
  skip: (reason) => {
    test.skip(true, reason);
    throw new Error('unreachable: test.skip ends the test');
  },
  attach: (name, body, contentType) => test.info().attach(name, { body, contentType }),
  extendTimeout: (ms) => test.info().setTimeout(test.info().timeout + ms),
});
