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

// A test that passes without reading its run's verdict fails (so `test.fails` passes), with
// conform's verdict in its message; `{ assertChecked: false }` opts out.
test.fails('a run whose verdict is never read fails its test', async () => {
  const run = await wireScenario('basic-tool-round');
  for await (const step of run.steps()) step.reply('I never called the model');
});

test('a run left unchecked on purpose passes', async () => {
  const run = await wireScenario('basic-tool-round', { assertChecked: false });
  for await (const step of run.steps()) step.reply('I never called the model');
});
