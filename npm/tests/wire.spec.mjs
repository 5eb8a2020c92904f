// The same harness test under vitest, through `ctxbed/vitest`: three built-in wire scenarios
// against the tiny agent, and a planted pairing bug reported with its trace.

import { expect, test } from 'vitest';
import { wireScenario, wireTests } from 'ctxbed/vitest';
import drive from './drive.js';

wireTests(['basic-tool-round', 'cut-stream', 'tool-error'], (run) => drive.drive(run));

test('a planted pairing bug is reported', async () => {
  const run = await wireScenario('basic-tool-round');
  await drive.drive(run, { dropToolResults: true });
  const verdict = await run.finish();
  expect(verdict.violations.map((v) => v.rule)).toContain('pairing');
  expect(verdict.report).toMatch(/trace of the steps named/);
  await expect(run.check()).rejects.toThrow(/pairing/);
});
