// ctxbed peer adapter for the OpenAI Agents SDK for TypeScript (`@openai/agents`; see
// docs/peer-protocol.md and this directory's README for what it configures and why). One process
// serves many scenarios: `ready` and `unsupported` say `"reset": true`, and a `reset` line drops
// the agent (its model and client, its tools with their call counts, every session) and takes the
// next scenario's environment, which the next `setup` reads anew.

import { Console } from 'node:console';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import * as agents from '@openai/agents';
import OpenAI from 'openai';

const { Agent, MemorySession, OpenAIChatCompletionsModel, OpenAIResponsesModel, run, setTracingDisabled, tool } = agents;

// Standard output carries protocol lines only: anything a library logs goes to standard error.
const send = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr });

// No tracing: the machine has no network but loopback.
setTracingDisabled(true);

// Read when a setup needs it, never kept from an earlier scenario: a `reset` changes it.
const env = process.env;

// Configurations other than the row's own, for the bug zoo (CTXBED_PEER_VARIANT, see the README);
// never chosen by a scenario. `chat`: the SDK's Chat Completions model instead of Responses.
const VARIANTS = ['', 'chat'];
const variant = env.CTXBED_PEER_VARIANT ?? '';
if (!VARIANTS.includes(variant)) {
  process.stderr.write(`openai-agents-js adapter: no variant '${variant}' (known: ${VARIANTS.filter(Boolean).join(', ')})\n`);
  process.exit(2);
}
if (variant === 'chat') env.CTXBED_AGENTS_MODEL = 'chat';

/** The protocol's environment variables: a `reset` line sets those it gives and unsets the others. */
const PROTOCOL_VARIABLES = [
  'CTXBED_API', 'CTXBED_OPENAI_BASE_URL', 'CTXBED_ANTHROPIC_BASE_URL', 'CTXBED_MODEL', 'CTXBED_API_KEY',
  'CTXBED_WINDOW', 'CTXBED_MAX_OUTPUT_TOKENS', 'CTXBED_THINKING_BUDGET', 'CTXBED_STREAM', 'CTXBED_STATE_DIR',
  'CTXBED_BIN', 'OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'NO_PROXY', 'no_proxy',
];

/** The next scenario's environment, as a new process would have it. */
function applyEnv(variables) {
  for (const name of PROTOCOL_VARIABLES) delete env[name];
  Object.assign(env, variables);
}

/** The SDK's default model, the Responses API, or Chat Completions when CTXBED_AGENTS_MODEL=chat;
 *  both over an OpenAI client pointed at the mock. */
function model() {
  const client = new OpenAI({ baseURL: env.CTXBED_OPENAI_BASE_URL, apiKey: env.CTXBED_API_KEY });
  return env.CTXBED_AGENTS_MODEL === 'chat'
    ? new OpenAIChatCompletionsModel(client, env.CTXBED_MODEL)
    : new OpenAIResponsesModel(client, env.CTXBED_MODEL);
}

/** A step line's `interrupt`: the step runs a clone of the agent whose tools need the SDK's own
 *  human-in-the-loop approval (`needsApproval`), never given: the run ends with the call in
 *  `result.interruptions`, and the next step is a new input in the same session with the row's
 *  own agent, whose tools ask for no approval. The clone's tools share the row's call counts. */
function stoppingAtToolCalls(agent) {
  return agent.clone({ tools: agent.tools.map((t) => ({ ...t, needsApproval: async () => true })) });
}

/** The scenario's tools: the n-th call of a tool returns results[n-1], then the last; a scripted
 *  failure is thrown, and reported to the model through the tool's documented `errorFunction` as
 *  the SDK's default wording plus the error's text (the default alone hides the text). */
function tools(specs) {
  return specs.map((spec) => {
    const results = spec.results?.length ? spec.results : [{ text: '', error: false }];
    let calls = 0;
    return tool({
      name: spec.name,
      description: spec.description || spec.name,
      parameters: spec.parameters ?? { type: 'object', properties: {} },
      // A JSON schema as given, not rewritten for strict mode.
      strict: false,
      errorFunction: (_context, error) =>
        `An error occurred while running the tool. Please try again. Error: ${error instanceof Error ? error.message : String(error)}`,
      execute: async () => {
        const result = results[Math.min(++calls, results.length) - 1];
        if (result.error) throw new Error(result.text);
        return result.text;
      },
    });
  });
}

/** The step's input: its text, or, when the step attaches images, one user message with the text
 *  and then each image as an `input_image` with a data URL, in order. */
function input(text, images) {
  if (!images?.length) return text;
  return [{
    role: 'user',
    content: [
      { type: 'input_text', text },
      ...images.map((image) => ({ type: 'input_image', image: `data:${image.media_type};base64,${image.data}` })),
    ],
  }];
}

function buildAgent(setup) {
  const agent = new Agent({
    name: 'ctxbed',
    instructions: setup.system || undefined,
    model: model(),
    modelSettings: { maxTokens: Number(env.CTXBED_MAX_OUTPUT_TOKENS) },
    tools: tools(setup.tools ?? []),
  });
  // One MemorySession per protocol session, the SDK's documented session memory.
  const sessions = new Map();
  // The step's answer line: its reply, or `interrupted` when it stopped for an approval.
  const answer = (step, result) => (result.interruptions?.length
    ? { type: 'interrupted', step }
    : { type: 'reply', step, text: String(result.finalOutput ?? '') });
  return async ({ step, session, input: text, images, interrupt }) => {
    if (!sessions.has(session)) sessions.set(session, new MemorySession());
    const options = { session: sessions.get(session) };
    const runner = interrupt ? stoppingAtToolCalls(agent) : agent;
    if (env.CTXBED_STREAM === '1') {
      const result = await run(runner, input(text, images), { ...options, stream: true });
      await result.completed;
      if (result.error) throw result.error;
      return answer(step, result);
    }
    return answer(step, await run(runner, input(text, images), options));
  };
}

const OVERFLOW = /context_length_exceeded|maximum context length|exceeds the context window/i;

/** The error and everything behind it (causes), outermost first. */
function chain(error) {
  const seen = [];
  for (let e = error; e && typeof e === 'object' && !seen.includes(e); e = e.cause) seen.push(e);
  return seen;
}

/** The protocol's error kind for what a run threw. */
function classify(error) {
  for (const e of chain(error)) {
    const body = `${e.message ?? ''} ${JSON.stringify(e.error ?? '')} ${e.code ?? ''}`;
    if (OVERFLOW.test(body)) return 'context_overflow';
    if (e.status === 429) return 'rate_limited';
    if (typeof e.status === 'number') return 'provider_error';
    if (e.name === 'APIConnectionTimeoutError' || e instanceof agents.ModelTimeoutError) return 'timeout';
    if (e instanceof agents.ModelBehaviorError || e instanceof SyntaxError) return 'malformed_reply';
  }
  return 'other';
}

// The package does not export its package.json: read it from beside the adapter's node_modules.
const version = JSON.parse(readFileSync(new URL('./node_modules/@openai/agents/package.json', import.meta.url), 'utf8')).version;
let ask = null;
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.type === 'setup') {
    if (!['openai', 'responses'].includes(env.CTXBED_API) || (env.CTXBED_API === 'responses' && env.CTXBED_AGENTS_MODEL === 'chat')) {
      ask = null;
      send({ type: 'unsupported', reason: `no client for CTXBED_API=${env.CTXBED_API}: the SDK speaks OpenAI's APIs`, reset: true });
      continue;
    }
    ask = buildAgent(msg);
    send({ type: 'ready', harness: 'openai-agents-js', version, context: 'none', reset: true, interrupts: true });
  } else if (msg.type === 'reset') {
    // Nothing of the scenario is kept; no line answers a reset.
    ask = null;
    applyEnv(msg.env ?? {});
  } else if (msg.type === 'step') {
    try {
      if (!ask) throw new Error('step before a successful setup');
      send(await ask(msg));
    } catch (error) {
      console.error(error);
      send({ type: 'error', step: msg.step, kind: classify(error), message: `${error.name}: ${error.message}`.slice(0, 2000) });
    }
  }
}
