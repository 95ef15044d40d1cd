/** Installs Playwright's recorder (src/checks/recorder.ts): steps, notes and attachments of the running test. */
import { test } from '@playwright/test';
import { useRecorder } from '../checks/recorder';

useRecorder({
  step: (title, body, options) => test.step(title, async () => body(), options),
  annotate: (type, description) => void test.info().annotations.push({ type, description }),
  attach: (name, body, contentType) => test.info().attach(name, { body, contentType }),
  skip: (reason) => {
    test.skip(true, reason);
    throw new Error('unreachable: test.skip ends the test');
  },
});
