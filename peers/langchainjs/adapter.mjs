// ctxbed peer adapter for LangChain.js `createAgent` with `summarizationMiddleware` (see
// docs/peer-protocol.md and this directory's README for what it configures and why). One process
// serves many scenarios: `ready` and `unsupported` say `"reset": true`, and a `reset` line drops
// the agent (its model, its tools with their call counts, its checkpointer with every session) and
// takes the next scenario's environment, which the next `setup` reads anew.

import { Console } from 'node:console';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ChatAnthropic } from '@langchain/anthropic';
import { MemorySaver, interrupt } from '@langchain/langgraph';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent, summarizationMiddleware, tool } from 'langchain';

// Older versions, for the bug zoo (bugs/): @langchain/core exports `./errors` (ContextOverflowError)
// only from 1.1.x on; before it there is no such error to read, and classify() goes without it.
const { ContextOverflowError } = await import('@langchain/core/errors').catch((error) => {
  if (error.code !== 'ERR_PACKAGE_PATH_NOT_EXPORTED') throw error;
  return { ContextOverflowError: null };
});

// Standard output carries protocol lines only: anything a library logs goes to standard error.
const send = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr });

// Offline: ChatOpenAI estimates a streamed reply's usage with tiktoken, whose encodings LangChain
// downloads on first use (and retries for a minute when it cannot). The same encodings ship with
// js-tiktoken; they are served from there, and every other request goes out as usual.
const TIKTOKEN = /^https:\/\/tiktoken\.pages\.dev\/js\/(\w+)\.json$/;
const fetchOnline = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const encoding = TIKTOKEN.exec(String(input?.url ?? input))?.[1];
  if (!encoding) return fetchOnline(input, init);
  const { default: ranks } = await import(`js-tiktoken/ranks/${encoding}`);
  return Response.json(ranks);
};

// Read when a setup needs it, never kept from an earlier scenario: a `reset` changes it.
const env = process.env;

// The adapter's configurations (CTXBED_PEER_VARIANT, for the bug zoo; see the README): the row's
// own runs each step with `agent.invoke`; `stream-events` drains `agent.streamEvents()` instead,
// the way an application streaming tokens to its user runs it, with ChatOpenAI's messages in
// LangChain's standard content blocks (`outputVersion: 'v1'`), so the thread keeps the messages
// LangChain reassembled from the stream's chunks, and sends them back from those blocks.
const VARIANT = env.CTXBED_PEER_VARIANT ?? '';
if (!['', 'stream-events'].includes(VARIANT)) {
  process.stderr.write(`langchainjs adapter: no variant '${VARIANT}' (known: stream-events)\n`);
  process.exit(2);
}

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

/** ChatOpenAI (Chat Completions, or the Responses API when the scenario pins it) or
 *  ChatAnthropic (Messages, thinking when the scenario turns it on). */
function chatModel() {
  const common = {
    model: env.CTXBED_MODEL,
    apiKey: env.CTXBED_API_KEY,
    maxTokens: Number(env.CTXBED_MAX_OUTPUT_TOKENS),
    streaming: env.CTXBED_STREAM === '1',
  };
  if (env.CTXBED_API === 'anthropic') {
    const budget = Number(env.CTXBED_THINKING_BUDGET);
    return new ChatAnthropic({
      ...common,
      anthropicApiUrl: env.CTXBED_ANTHROPIC_BASE_URL,
      ...(budget > 0 && { thinking: { type: 'enabled', budget_tokens: budget } }),
    });
  }
  return new ChatOpenAI({
    ...common,
    configuration: { baseURL: env.CTXBED_OPENAI_BASE_URL },
    useResponsesApi: env.CTXBED_API === 'responses',
    ...(VARIANT === 'stream-events' && { outputVersion: 'v1' }),
  });
}

/** A step line's `interrupt`: the step stops at its first tool call through LangGraph's own
 *  human-in-the-loop `interrupt()`, called in the tool before it counts or runs the call, so the
 *  thread keeps the AI message's tool calls and no ToolMessage for them. */
const stepInterrupt = { asked: false, happened: false };

/** The scenario's tools: the n-th call of a tool returns results[n-1], then the last; a
 *  scripted failure is thrown, and the agent's tool node reports it to the model. In a step that
 *  asks for an interrupt, each call stops the run instead (`stepInterrupt`). */
function tools(specs) {
  return specs.map((spec) => {
    const results = spec.results?.length ? spec.results : [{ text: '', error: false }];
    let calls = 0;
    return tool(async () => {
      if (stepInterrupt.asked) {
        stepInterrupt.happened = true;
        interrupt({ tool: spec.name, reason: 'the step stops at its first tool call' });
      }
      const result = results[Math.min(++calls, results.length) - 1];
      if (result.error) throw new Error(result.text);
      return result.text;
    }, {
      name: spec.name,
      description: spec.description || spec.name,
      schema: spec.parameters ?? { type: 'object', properties: {} },
    });
  });
}

/** The checkpointer that keeps every session (a thread per protocol `session`): a MemorySaver,
 *  or, when CTXBED_STATE_DIR is set (a scenario that restarts the harness), LangGraph's SQLite
 *  checkpointer over a file there, so a new process continues every thread, summaries included,
 *  where the old one left it. better-sqlite3 writes each checkpoint before `put` returns, and
 *  `invoke` returns only once every checkpoint of the run is put. The package (a native module)
 *  is loaded only when a scenario needs it. */
async function checkpointer() {
  const stateDir = env.CTXBED_STATE_DIR;
  if (!stateDir) return new MemorySaver();
  const { SqliteSaver } = await import('@langchain/langgraph-checkpoint-sqlite');
  mkdirSync(stateDir, { recursive: true });
  return SqliteSaver.fromConnString(join(stateDir, 'langgraph-checkpoints.sqlite'));
}

/** Closes a SqliteSaver's database (a MemorySaver has none). */
function closeCheckpointer(saver) {
  saver?.db?.close();
}

function buildAgent(setup, saver) {
  const model = chatModel();
  const window = Number(env.CTXBED_WINDOW);
  return createAgent({
    model,
    tools: tools(setup.tools ?? []),
    systemPrompt: setup.system || undefined,
    middleware: [
      // Summarise once the history reaches 80 % of the window, keeping the 20 latest messages.
      summarizationMiddleware({ model, trigger: { tokens: Math.floor(window * 0.8) }, keep: { messages: 20 } }),
    ],
    checkpointer: saver,
  });
}

/** The step's user message (a HumanMessage): its text alone, or, when the step attaches images,
 *  the text then each image as an OpenAI-style `image_url` block with a data URL, in order. Of
 *  LangChain.js's documented image blocks this is the one that ChatOpenAI (Chat Completions and
 *  Responses) and ChatAnthropic all turn into their provider's image part (see the README). */
function userMessage(input, images) {
  if (!images?.length) return { role: 'user', content: input };
  return {
    role: 'user',
    content: [
      { type: 'text', text: input },
      ...images.map((image) => ({ type: 'image_url', image_url: { url: `data:${image.media_type};base64,${image.data}` } })),
    ],
  };
}

const OVERFLOW = /context_length_exceeded|prompt is too long|maximum context length/i;

/** The error and everything behind it (causes, aggregated errors), breadth first. */
function chain(error) {
  const seen = [];
  for (const queue = [error]; queue.length;) {
    const e = queue.shift();
    if (!e || typeof e !== 'object' || seen.includes(e)) continue;
    seen.push(e);
    queue.push(e.cause, ...(Array.isArray(e.errors) ? e.errors : []));
  }
  return seen;
}

/** The protocol's error kind of one provider SDK error, or null if `e` is not one. */
function providerKind(e) {
  if (e.code === 'context_length_exceeded' || e.error?.code === 'context_length_exceeded') return 'context_overflow';
  if (typeof e.status !== 'number') return null;
  if ((e.status === 400 || e.status === 413) && OVERFLOW.test(`${e.message} ${JSON.stringify(e.error ?? '')}`)) return 'context_overflow';
  if (e.status === 429) return 'rate_limited';
  return 'provider_error';
}

/** The protocol's error kind for what a step threw. */
function classify(error) {
  const errors = chain(error);
  for (const e of errors) {
    const kind = providerKind(e);
    if (kind) return kind;
  }
  for (const e of errors) {
    if (ContextOverflowError?.isInstance(e)) return e.cause ? 'context_overflow' : 'budget_refused';
    if (e.name === 'TimeoutError' || e.name === 'APIConnectionTimeoutError') return 'timeout';
    if (e instanceof SyntaxError) return 'malformed_reply';
  }
  return 'other';
}

/** Runs one step to its end and returns the thread's state: `invoke`, or on the `stream-events`
 *  variant every event of `streamEvents` (v2) read, the state being the output of the run its
 *  first event starts. */
async function runStep(input, config) {
  if (VARIANT !== 'stream-events') return agent.invoke(input, config);
  let root = null;
  let output = null;
  for await (const event of agent.streamEvents(input, { ...config, version: 'v2' })) {
    root ??= event.run_id;
    if (event.event === 'on_chain_end' && event.run_id === root) output = event.data.output;
  }
  if (!output?.messages) throw new Error('streamEvents ended without the run\'s final state');
  return output;
}

const version = createRequire(import.meta.url)('langchain/package.json').version;
let agent = null;
let saver = null;
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.type === 'setup') {
    if (!['openai', 'responses', 'anthropic'].includes(env.CTXBED_API)) {
      send({ type: 'unsupported', reason: `no client for CTXBED_API=${env.CTXBED_API}`, reset: true });
      continue;
    }
    closeCheckpointer(saver);
    saver = await checkpointer();
    agent = buildAgent(msg, saver);
    send({ type: 'ready', harness: 'langchainjs', version, reset: true, interrupts: true });
  } else if (msg.type === 'reset') {
    // Nothing of the scenario is kept; no line answers a reset.
    closeCheckpointer(saver);
    agent = null;
    saver = null;
    applyEnv(msg.env ?? {});
  } else if (msg.type === 'step') {
    try {
      if (!agent) throw new Error('step before a successful setup');
      Object.assign(stepInterrupt, { asked: Boolean(msg.interrupt), happened: false });
      const result = await runStep(
        { messages: [userMessage(msg.input, msg.images)] },
        { configurable: { thread_id: msg.session }, metadata: { user_id: msg.user } },
      );
      // Paused at the tool call, the next step's new message goes on in the same thread.
      send(stepInterrupt.happened
        ? { type: 'interrupted', step: msg.step }
        : { type: 'reply', step: msg.step, text: result.messages.at(-1).text });
    } catch (error) {
      console.error(error);
      send({ type: 'error', step: msg.step, kind: classify(error), message: `${error.name}: ${error.message}`.slice(0, 2000) });
    }
  }
}
closeCheckpointer(saver);
