// ctxbed peer adapter for the Vercel AI SDK's ToolLoopAgent (see docs/peer-protocol.md and
// this directory's README for what it configures and why). One process serves many scenarios:
// `ready` and `unsupported` say `"reset": true`, and a `reset` line drops the agent (its model,
// its tools with their call counts, every session) and takes the next scenario's environment,
// which the next `setup` reads anew (CTXBED_STATE_DIR, where sessions are kept on disk, or its
// absence, included).

import { Console } from 'node:console';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import * as ai from 'ai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';

const { APICallError, RetryError, jsonSchema, stepCountIs, tool } = ai;
// Older versions, for the bug zoo (bugs/): `ai` 5 has the same agent as `Experimental_Agent`, which
// takes the system prompt as `system`; 6.0 named it `ToolLoopAgent` and the option `instructions`.
const ToolLoopAgent = ai.ToolLoopAgent ?? ai.Experimental_Agent;
const SYSTEM_OPTION = ai.ToolLoopAgent ? 'instructions' : 'system';

// Standard output carries protocol lines only: anything a library logs goes to standard error.
const send = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr });

// Read when a setup needs it, never kept from an earlier scenario: a `reset` changes it.
const env = process.env;

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

/** Chat Completions, the Responses API when the scenario pins it, or Anthropic Messages. */
function model(api) {
  if (api === 'anthropic') {
    return createAnthropic({ baseURL: `${env.CTXBED_ANTHROPIC_BASE_URL}/v1`, apiKey: env.CTXBED_API_KEY })(env.CTXBED_MODEL);
  }
  const openai = createOpenAI({ baseURL: env.CTXBED_OPENAI_BASE_URL, apiKey: env.CTXBED_API_KEY });
  return api === 'responses' ? openai.responses(env.CTXBED_MODEL) : openai.chat(env.CTXBED_MODEL);
}

/** The scenario's tools: the n-th call of a tool returns results[n-1], then the last; a
 *  scripted failure is thrown, as a failing tool would. */
function tools(specs) {
  return Object.fromEntries(specs.map((spec) => {
    const results = spec.results?.length ? spec.results : [{ text: '', error: false }];
    let calls = 0;
    return [spec.name, tool({
      description: spec.description,
      inputSchema: jsonSchema(spec.parameters ?? { type: 'object', properties: {} }),
      execute: async () => {
        const result = results[Math.min(++calls, results.length) - 1];
        if (result.error) throw new Error(result.text);
        return result.text;
      },
    })];
  }));
}

/** The loop-control docs' recipe for long conversations: once a step's prompt holds more than
 *  twenty messages, keep the first and the last ten. */
async function recipe({ messages }) {
  if (messages.length > 20) {
    return { messages: [messages[0], ...messages.slice(-10)] };
  }
  return {};
}

/** The row's configuration, or another one a bug of the zoo needs (`CTXBED_PEER_VARIANT`, see
 *  the README): never chosen by a scenario. */
const VARIANTS = {
  '': recipe,
  // The SDK's own trimmer as its reference shows it in prepareStep: tool calls and results
  // before the last message removed.
  'prune-before-last-message': async ({ messages }) => ({
    messages: ai.pruneMessages({ messages, toolCalls: 'before-last-message' }),
  }),
  // Responses kept on the server and chained through the tool loop, as the OpenAI provider's
  // docs and vercel/ai#15502's reproduction do it: each request after the first of a step names
  // the last one's response in previousResponseId, with store on.
  'previous-response-id': async ({ steps }) => {
    const previousResponseId = steps.at(-1)?.providerMetadata?.openai?.responseId;
    return { providerOptions: { openai: { store: true, ...(previousResponseId && { previousResponseId }) } } };
  },
};
const variant = env.CTXBED_PEER_VARIANT ?? '';
if (!(variant in VARIANTS)) {
  process.stderr.write(`ai-sdk adapter: no variant '${variant}' (known: ${Object.keys(VARIANTS).filter(Boolean).join(', ')})\n`);
  process.exit(2);
}
const prepareStep = VARIANTS[variant];

/** Anthropic's extended thinking, as the AI SDK's Anthropic docs give it. The provider adds
 *  `budgetTokens` to `maxOutputTokens` for `max_tokens`, so the reply asks for what is left. */
function thinking(api, maxOutputTokens) {
  const thinkingBudget = api === 'anthropic' ? Number(env.CTXBED_THINKING_BUDGET) || 0 : 0;
  return thinkingBudget > 0
    ? {
        maxOutputTokens: maxOutputTokens - thinkingBudget,
        providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: thinkingBudget } } },
      }
    : {};
}

/** The step's user message: its text alone, or, when the step attaches images, the text then
 *  each image as the AI SDK's image part, in order. */
function userMessage(input, images) {
  if (!images?.length) return { role: 'user', content: input };
  return {
    role: 'user',
    content: [
      { type: 'text', text: input },
      ...images.map((image) => ({ type: 'image', image: image.data, mediaType: image.media_type })),
    ],
  };
}

/** The sessions' message lists: in memory, or, when CTXBED_STATE_DIR is set (a scenario that
 *  restarts the harness), also on disk as the AI SDK's message-persistence docs keep a chat: a
 *  JSON file of its messages per session, written after every step and read back on the
 *  session's first step in a new process. */
function sessionStore(stateDir) {
  const sessions = new Map();
  // Any session name as a file name that stays in the directory: the hex of its UTF-8 bytes.
  const file = (session) => join(stateDir, `${Buffer.from(session, 'utf8').toString('hex')}.json`);
  return {
    async load(session) {
      if (!sessions.has(session)) {
        sessions.set(session, stateDir ? await readMessages(file(session)) : []);
      }
      return sessions.get(session);
    },
    async save(session) {
      if (!stateDir) return;
      // Whole or not at all: a temporary file, renamed over the old one.
      await mkdir(stateDir, { recursive: true });
      await writeFile(`${file(session)}.tmp`, JSON.stringify(sessions.get(session)));
      await rename(`${file(session)}.tmp`, file(session));
    },
  };
}

/** A session's stored messages, or none when it has no file yet. */
async function readMessages(path) {
  try {
    return JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return [];
    throw error;
  }
}

function buildAgent(setup) {
  const api = env.CTXBED_API;
  const maxOutputTokens = Number(env.CTXBED_MAX_OUTPUT_TOKENS);
  const agent = new ToolLoopAgent({
    model: model(api),
    [SYSTEM_OPTION]: setup.system || undefined,
    tools: tools(setup.tools ?? []),
    maxOutputTokens,
    stopWhen: stepCountIs(20),
    prepareStep,
    ...thinking(api, maxOutputTokens),
  });
  const sessions = sessionStore(env.CTXBED_STATE_DIR);
  return async (session, input, images) => {
    const messages = await sessions.load(session);
    messages.push(userMessage(input, images));
    try {
      if (env.CTXBED_STREAM === '1') {
        const result = await agent.stream({ messages });
        const text = await result.text;
        messages.push(...(await result.response).messages);
        return text;
      }
      const result = await agent.generate({ messages });
      messages.push(...result.response.messages);
      return result.text;
    } finally {
      // Before the step's answer is sent, failed or not: the list as this process keeps it.
      await sessions.save(session);
    }
  };
}

/** The protocol's error kind for what the AI SDK threw. */
function classify(error) {
  const cause = RetryError.isInstance(error) ? error.lastError : error;
  if (APICallError.isInstance(cause)) {
    const body = `${cause.responseBody ?? ''} ${cause.message}`;
    if (/context_length_exceeded|maximum context length|prompt is too long/.test(body)) return 'context_overflow';
    if (cause.statusCode === 429) return 'rate_limited';
    return 'provider_error';
  }
  return 'other';
}

const version = createRequire(import.meta.url)('ai/package.json').version;
let ask = null;
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.type === 'setup') {
    if (!['openai', 'responses', 'anthropic'].includes(env.CTXBED_API)) {
      send({ type: 'unsupported', reason: `no client for CTXBED_API=${env.CTXBED_API}`, reset: true });
      continue;
    }
    ask = buildAgent(msg);
    send({ type: 'ready', harness: 'ai-sdk', version, context: variant === 'previous-response-id' ? 'none' : 'docs recipe', reset: true });
  } else if (msg.type === 'reset') {
    // Nothing of the scenario is kept; no line answers a reset.
    ask = null;
    applyEnv(msg.env ?? {});
  } else if (msg.type === 'step') {
    try {
      if (!ask) throw new Error('step before a successful setup');
      send({ type: 'reply', step: msg.step, text: await ask(msg.session, msg.input, msg.images) });
    } catch (error) {
      console.error(error);
      send({ type: 'error', step: msg.step, kind: classify(error), message: `${error.name}: ${error.message}`.slice(0, 2000) });
    }
  }
}
