'use strict';
// A harness's own node:test file with the ctxbed package: three built-in wire scenarios against
// the tiny agent, and the same agent with a planted bug, whose violation the package reports.

const assert = require('node:assert');
const { test } = require('node:test');
const { serve, wireScenario, wireTests } = require('ctxbed');
const { ProviderError, TinyAgent } = require('./tiny-agent');

function agentFor(run, options = {}) {
  return new TinyAgent({
    baseUrl: run.openaiBaseUrl,
    model: run.model,
    system: run.system,
    maxTokens: run.maxOutputTokens,
    tools: run.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
    runTool: (name, args) => run.tool(name).call(args),
    ...options,
  });
}

async function drive(run, options) {
  const agent = agentFor(run, options);
  for await (const step of run.steps()) {
    try {
      step.reply(await agent.ask(step.session, step.input));
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      step.error(error.body.includes('context') ? 'context_overflow' : 'provider_error', error.message);
    }
  }
}

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
