'use strict';
// The Vercel AI SDK as a harness's own node:test file with the ctxbed package: every built-in
// wire scenario against the ToolLoopAgent of agent.js, each verdict compared with the one
// pinned below. Run it where ctxbed and this directory's pinned packages are installed:
// `npm ci && npm install --no-save ctxbed && node --test`.

const assert = require('node:assert');
const { APICallError, RetryError } = require('ai');
const { scenarios, wireTests } = require('ctxbed');
const { buildAgent } = require('./agent');

// What the docs' recipe breaks, by scenario, as `rule step N` (every other scenario passes).
// Each was read in its trace:
const EXPECTED = {
  // The 9,000-character first input goes to the 1,000-token window as it is, and stays in the
  // session's history: step 2's short question is sent with it and refused too.
  'first-input-too-large': ['window step 1', 'window step 2', 'expect step 2'],
  // A 120,000-character tool result goes to the model whole: nothing in the recipe looks at
  // sizes, so both steps send 53k tokens to a 16k window (and step 2's reply is that 400).
  'huge-tool-result': ['window step 1', 'window step 2', 'expect step 2'],
  // The provider's overflow at step 9 is thrown to the caller, not recovered from; at step 10
  // the recipe's cut (first message + last ten) starts the kept part with a tool result whose
  // call it dropped, and the provider refuses the orphan.
  'overflow-anthropic': ['pairing step 10', 'expect step 9', 'expect step 10'],
  'overflow-openai': ['pairing step 10', 'expect step 9', 'expect step 10'],
  // The same when a gateway (a LiteLLM proxy) words the overflow its own way.
  'gateway-overflow': ['pairing step 10', 'expect step 9', 'expect step 10'],
  // DeepSeek's thinking mode: the Chat provider reads each reply's `reasoning_content` but sends
  // the tool-call message back without it, and every step's second request is refused.
  'chat-reasoning': [
    ...Array.from({ length: 12 }, (_, i) => `reasoning step ${i + 1}`),
    'expect step 12',
  ],
  // Both overflows (steps 9 and 10) are thrown to the caller; the recipe's cut never orphans a
  // result here, since each step's overflow comes before its tool call.
  'second-overflow': ['expect step 9', 'expect step 10'],
  // The same on the Responses API (`openai.responses(...)`): the overflow at step 9, then the
  // orphaned tool result of the recipe's cut refused at step 10.
  'responses-overflow': ['pairing step 10', 'expect step 9', 'expect step 10'],
  // Streamed, the overflow comes as the stream's error event; the AI SDK's stream ends with
  // `NoOutputGeneratedError`, and at step 10 the refused request (a 400 before any event) ends
  // the streamed step with empty text instead of an error.
  'responses-overflow-stream': ['reply step 10', 'pairing step 10', 'expect step 9', 'expect step 10'],
  // Message counts are no measure of tokens here: what the recipe keeps reaches 11,000 tokens by
  // step 5, and the request carrying step 5's 3,600-character result is over the window, as is
  // step 6's. Pairing holds: no kept result loses its call.
  'summary-cut-fan-out': ['window step 5', 'window step 6', 'expect step 6'],
  // Sixteen messages of parallel calls and 1,500-character results pass 6,000 tokens before
  // the recipe's twenty-message threshold is reached: steps 4 to 8 overflow.
  'parallel-tools': [
    'window step 4',
    'window step 5',
    'window step 6',
    'window step 7',
    'window step 8',
    'expect step 8',
  ],
  // The same on Anthropic Messages: pairing holds, the window does not.
  'parallel-tools-anthropic': [
    'window step 4',
    'window step 5',
    'window step 6',
    'window step 7',
    'window step 8',
    'expect step 8',
  ],
  // Both pass, pinned here so that a ctxbed without them fails the check below. With extended
  // thinking on, the recipe's cut falls inside a step's tool loop and keeps the last ten
  // messages whole, so the turn whose tool call a request answers keeps its signed thinking.
  'thinking-compaction': [],
  'cache-prefix': [],
  // Ten steps each attaching a 1280 x 800 screenshot, which Anthropic counts as 1,366 tokens:
  // five screenshots pass the 8,000-token window before the recipe's twenty-message threshold,
  // and the ten messages it keeps after it still hold more than the window. Over OpenAI the
  // same screenshot is 1,105 tokens and what the recipe keeps fits: `images` passes.
  'images-anthropic': [
    'window step 5',
    'window step 6',
    'window step 7',
    'window step 8',
    'window step 9',
    'window step 10',
    'expect step 10',
  ],
  images: [],
};

/** The wire protocol's error kind for what the AI SDK threw. */
function classify(error) {
  const cause = RetryError.isInstance(error) ? error.lastError : error;
  if (APICallError.isInstance(cause)) {
    const body = `${cause.responseBody || ''} ${cause.message}`;
    if (/context_length_exceeded|maximum context length|prompt is too long/.test(body)) return 'context_overflow';
    if (cause.statusCode === 429) return 'rate_limited';
    return 'provider_error';
  }
  return 'other';
}

for (const name of Object.keys(EXPECTED)) {
  assert.ok(scenarios().includes(name), `${name} is not a built-in wire scenario`);
}

const harness = { harness: 'ai-sdk', version: require('ai/package.json').version, context: 'docs recipe' };

wireTests([], async (run) => {
  let agent = buildAgent(run);
  for await (const step of run.steps()) {
    // A restart: a user's process would be new here, so the agent is built again and finds its
    // sessions where it kept them.
    if (step.restarted) agent = buildAgent(run);
    try {
      step.reply(await agent.ask(step.session, step.input, step.images));
    } catch (error) {
      step.error(classify(error), `${error.name}: ${error.message}`);
    }
  }
  const verdict = await run.finish();
  const broken = verdict.violations.map((v) => `${v.rule} step ${v.step}`);
  assert.deepStrictEqual(broken, EXPECTED[run.name] || [], verdict.report);
}, harness);
