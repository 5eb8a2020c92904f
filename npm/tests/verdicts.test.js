'use strict';
// False verdicts the package must not give: a run whose verdict nobody reads, a step never
// answered, a trace that does not name the harness, a failure naming a log that is gone.

const assert = require('node:assert');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const { test } = require('node:test');
const { wireScenario } = require('ctxbed');

/** `node --test unchecked-run.js` here, opting out or not: its status and what it printed. */
function runUnchecked(optOut) {
  const env = { ...process.env, CTXBED_OPT_OUT: optOut ? '1' : '0' };
  delete env.NODE_TEST_CONTEXT; // a test run of its own, not a child of this one
  const done = spawnSync(process.execPath, ['--test', 'unchecked-run.js'], { cwd: __dirname, env, encoding: 'utf8', timeout: 60_000 });
  return { status: done.status, said: `${done.stdout}${done.stderr}` };
}

test('a run whose verdict is never read fails its test file, with the verdict', () => {
  const { status, said } = runUnchecked(false);
  assert.notStrictEqual(status, 0, said);
  assert.match(said, /verdict was never checked/);
  assert.match(said, /run\.check\(\)/);
  assert.match(said, /assertChecked: false/);
  const optedOut = runUnchecked(true);
  assert.strictEqual(optedOut.status, 0, optedOut.said);
});

test('an unanswered step fails at once and its step never passes', async () => {
  const started = Date.now();
  const run = await wireScenario('basic-tool-round');
  await assert.rejects(
    (async () => {
      for await (const step of run.steps()) void step; // the test's code forgot step.reply(...)
    })(),
    /step 1 was not answered: call step\.reply/,
  );
  const verdict = await run.finish();
  assert.ok(Date.now() - started < 10_000, 'reported at once, not at conform\'s 120 s step timeout');
  assert.ok(verdict.rules.includes('adapter'), verdict.report);
  assert.match(verdict.trace, /step verdict: fail: adapter/);
  assert.doesNotMatch(verdict.trace, /step verdict: pass/);
  assert.match(verdict.trace, /step 1 was never answered: the test's code took the next step/);
});

test('the trace header names the harness, version and context given', async () => {
  const run = await wireScenario('basic-tool-round', { harness: 'my-agent', version: '1.2.3', context: 'docs recipe' });
  for await (const step of run.steps()) step.reply('no model called');
  const { trace } = await run.finish();
  assert.match(trace, /\nharness my-agent 1\.2\.3\n/);
  assert.match(trace, /\ncontext management: docs recipe\n/);
});

test('a failure names a log that is still there', async () => {
  const run = await wireScenario('basic-tool-round');
  for await (const step of run.steps()) step.reply('no model called');
  await assert.rejects(run.check(), (error) => {
    const named = /adapter log: (\S+)/.exec(error.message);
    assert.ok(named, error.message);
    assert.ok(fs.existsSync(named[1]), `${named[1]} is kept`);
    return true;
  });
  const { log } = await run.finish();
  assert.ok(fs.existsSync(log) && fs.existsSync(log.replace(/\.log$/, '.trace')), log);
});
