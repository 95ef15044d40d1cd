/** The entry of a reproduction script: its plan is written above the bundle as `PLAN`. */
import { redact } from '../http/redact';
import type { Plan } from './plan';
import { reproduce } from './runner';

declare const PLAN: Plan;

reproduce(PLAN).then(
  (code) => process.exit(code),
  (error: Error) => {
    console.error(`COULD NOT TELL: the reproduction itself failed: ${redact(error.message)}`);
    process.exit(2);
  },
);
