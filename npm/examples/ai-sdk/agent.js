'use strict';
// The harness under test: the Vercel AI SDK's ToolLoopAgent, configured as its loop-control
// docs recommend for long conversations (`prepareStep` keeping the first message and the last
// ten once a step's prompt holds more than twenty), one history per session, the scenario's
// tools as AI SDK tools. The AI SDK has no token-aware trimming of its own: this is the docs'
// recipe, unchanged, and the verdicts are the recipe's.

const fs = require('node:fs');
const path = require('node:path');
const { ToolLoopAgent, jsonSchema, stepCountIs, tool } = require('ai');
const { createAnthropic } = require('@ai-sdk/anthropic');
const { createOpenAI } = require('@ai-sdk/openai');

/**
 * The provider the scenario's mock imitates: Chat Completions, the Responses API when the
 * scenario pins it, or Anthropic Messages.
 */
function modelFor(run) {
  if (run.api === 'anthropic') {
    return createAnthropic({ baseURL: `${run.anthropicBaseUrl}/v1`, apiKey: run.apiKey })(run.model);
  }
  const openai = createOpenAI({ baseURL: run.openaiBaseUrl, apiKey: run.apiKey });
  return run.api === 'responses' ? openai.responses(run.model) : openai.chat(run.model);
}

/** The scenario's tools; a scripted failure is thrown, as a failing tool would. */
function toolsFor(run) {
  const tools = {};
  for (const spec of run.tools) {
    tools[spec.name] = tool({
      description: spec.description,
      inputSchema: jsonSchema(spec.parameters),
      execute: async (args) => {
        const result = run.tool(spec.name).call(args);
        if (result.error) throw new Error(result.text);
        return result.text;
      },
    });
  }
  return tools;
}

/** Keep the first message and the last ten once there are more than twenty (the docs' recipe). */
async function prepareStep({ messages }) {
  if (messages.length > 20) {
    return { messages: [messages[0], ...messages.slice(-10)] };
  }
  return {};
}

/**
 * Anthropic's extended thinking, when the scenario turns it on (`CTXBED_THINKING_BUDGET`): the
 * provider option the AI SDK's Anthropic docs give. The provider adds `budgetTokens` to
 * `maxOutputTokens` for `max_tokens`, so the reply gets what is left of the scenario's budget.
 */
function thinkingFor(run) {
  const budget = Number(run.env.CTXBED_THINKING_BUDGET);
  if (run.api !== 'anthropic' || !Number.isInteger(budget) || budget <= 0) return {};
  return {
    maxOutputTokens: run.maxOutputTokens - budget,
    providerOptions: { anthropic: { thinking: { type: 'enabled', budgetTokens: budget } } },
  };
}

/** The user's message: the text alone, or the text then each attached image as the AI SDK's
 *  image part. */
function userMessage(input, images) {
  if (!images || images.length === 0) return { role: 'user', content: input };
  const parts = images.map((image) => ({ type: 'image', image: image.data, mediaType: image.media_type }));
  return { role: 'user', content: [{ type: 'text', text: input }, ...parts] };
}

/**
 * Where a session's messages are kept, as the AI SDK's message-persistence docs do: a JSON file
 * per session under the scenario's state directory when it restarts the harness (so an agent
 * built again after the restart continues the session), else nowhere (memory only).
 */
function sessionStore(run) {
  const dir = run.env.CTXBED_STATE_DIR;
  const file = (session) => path.join(dir, `${Buffer.from(session).toString('hex')}.json`);
  return {
    load(session) {
      if (!dir || !fs.existsSync(file(session))) return [];
      return JSON.parse(fs.readFileSync(file(session), 'utf8'));
    },
    save(session, messages) {
      if (dir) fs.writeFileSync(file(session), JSON.stringify(messages));
    },
  };
}

/** An agent answering `ask(session, input, images)`, keeping each session's messages. */
function buildAgent(run) {
  const agent = new ToolLoopAgent({
    model: modelFor(run),
    instructions: run.system || undefined,
    tools: toolsFor(run),
    maxOutputTokens: run.maxOutputTokens,
    stopWhen: stepCountIs(20),
    prepareStep,
    ...thinkingFor(run),
  });
  const sessions = new Map();
  const store = sessionStore(run);
  return {
    async ask(session, input, images) {
      const messages = sessions.get(session) || store.load(session);
      messages.push(userMessage(input, images));
      sessions.set(session, messages);
      let text;
      if (run.stream) {
        const result = await agent.stream({ messages });
        text = await result.text;
        messages.push(...(await result.response).messages);
      } else {
        const result = await agent.generate({ messages });
        messages.push(...result.response.messages);
        text = result.text;
      }
      store.save(session, messages);
      return text;
    },
  };
}

module.exports = { buildAgent };
