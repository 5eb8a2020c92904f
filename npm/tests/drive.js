'use strict';
// How the sample tests drive the tiny agent through a wire run: the agent built on the run's
// base URL, model, system prompt and tools, each step answered with its reply, or with the
// provider's error read as the wire protocol's kind.

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

module.exports = { agentFor, drive };
