'use strict';
// A harness's own node:test file with the ctxbed package: three built-in wire scenarios against
// the tiny agent, and the same agent with a planted bug, whose violation the package reports.

const assert = require('node:assert');
const { test } = require('node:test');
const { serve, wireScenario, wireTests } = require('ctxbed');
const { TinyAgent } = require('./tiny-agent');
const { agentFor, drive } = require('./drive');

wireTests(['basic-tool-round', 'cut-stream', 'tool-error'], (run) => drive(run));

test('a planted pairing bug is reported', async () => {
  const run = await wireScenario('basic-tool-round');
  await drive(run, { dropToolResults: true });
  const verdict = await run.finish();
  assert.ok(verdict.violations.some((v) => v.rule === 'pairing'), verdict.report);
  assert.match(verdict.report, /wire rule\(s\) broken/);
  assert.match(verdict.report, /trace of the steps named/);
  await assert.rejects(run.check(), (error) => error.name === 'WireRuleViolation' && /pairing/.test(error.message));
});

test('an agent without context management overflows', async () => {
  const run = await wireScenario('window-english');
  await drive(run);
  const violations = await run.violations();
  assert.ok(violations.some((v) => v.rule === 'window'), JSON.stringify(violations));
});

test('the server records what it received', async () => {
  const server = await serve({ builtin: 'wire-window-8k-english' });
  try {
    const agent = new TinyAgent({ baseUrl: server.openaiBaseUrl, model: 'wire-window-8k-english', tools: [], runTool: () => ({}) });
    await agent.ask('s1', 'hello').catch(() => {});
    assert.strictEqual(server.requests().length, 1);
  } finally {
    await server.close();
  }
});

async function post(server, body) {
  const answer = await fetch(`${server.openaiBaseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return answer.status;
}

test('a mock given as an object is served and its violations computed', async () => {
  const server = await serve({ mock: { description: 'a 200-token window', window: 200, turns: [{ reply: 'fine' }] } });
  try {
    assert.deepStrictEqual(await server.info(), { model: 'mock', window: 200 });
    const orphan = [
      { role: 'user', content: 'what is six times seven?' },
      { role: 'tool', tool_call_id: 'call_1', content: '42' },
    ];
    await post(server, { model: 'mock', messages: orphan, max_tokens: 16 });
    await post(server, { model: 'mock', messages: [{ role: 'user', content: 'hi' }], max_tokens: 500 });
    const violations = server.violations();
    assert.deepStrictEqual(violations.map((v) => [v.rule, v.request]), [['pairing', 1], ['window', 2]]);
    assert.match(violations[0].detail, /call_1/);
    assert.deepStrictEqual(server.violations({ rules: ['window'] }).map((v) => v.rule), ['window']);
    assert.throws(() => server.violations({ rules: ['input'] }), /unknown rule `input`/);
  } finally {
    await server.close();
  }
});

test('a wrong mock object is refused with the binary\'s diagnostic', async () => {
  await assert.rejects(serve({ mock: { window: 'big', turns: [{ reply: 'x' }] } }), /did not start[\s\S]*window/);
  await assert.rejects(serve({ mock: { turns: [{ reply: null }] } }), /turns\[0\]\.reply: TOML has no null/);
});

test('the in-process adapter runs a callable', async () => {
  const { conform } = require('ctxbed');
  const verdicts = await conform.run(
    (run) => {
      const agent = agentFor(run);
      return (step) => agent.ask(step.session, step.input);
    },
    { scenarios: ['basic-tool-round', 'window-english'] },
  );
  assert.ok(verdicts['basic-tool-round'].ok, verdicts['basic-tool-round'].report);
  assert.ok(!verdicts['window-english'].ok);
  assert.ok(verdicts['window-english'].rules.includes('window'), verdicts['window-english'].report);
});
