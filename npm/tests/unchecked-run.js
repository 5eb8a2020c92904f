'use strict';
// Run by verdicts.test.js as a test file of its own (`node --test unchecked-run.js`): a test that
// answers every step without calling the model and never reads its run's verdict.
// CTXBED_OPT_OUT=1 passes `{ assertChecked: false }`.

const { test } = require('node:test');
const { wireScenario } = require('ctxbed');

test('forgets the check', async () => {
  const run = await wireScenario('basic-tool-round', { assertChecked: process.env.CTXBED_OPT_OUT !== '1' });
  for await (const step of run.steps()) step.reply('I never called the model');
});
