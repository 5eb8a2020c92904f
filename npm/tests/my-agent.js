'use strict';
// What the README's "Test your harness" example requires as the user's harness: a small agent
// loop (fetch only) configured as a user configures theirs, from what the run gives: the API
// (OpenAI Chat Completions or Anthropic Messages, each with its own client), the base URL, the
// model, the context window (old turns are dropped to fit it), the output budget, streaming (a
// stream cut short is asked again), Anthropic's thinking budget, the system prompt and the
// scenario's tools (each with a name, a description, JSON Schema parameters and `call()`).

const { ProviderError } = require('./tiny-agent');

class CutStream extends Error {}

class MyAgent {
  constructor({ api, baseUrl, model, window = null, maxOutputTokens = 1024, stream = false, thinkingBudget = null, system = '', tools = [] }) {
    if (api !== 'openai' && api !== 'anthropic') {
      throw new Error(`MyAgent speaks OpenAI Chat Completions and Anthropic Messages, not ${api}`);
    }
    Object.assign(this, { api, baseUrl: baseUrl.replace(/\/$/, ''), model, window, maxOutputTokens, stream, thinkingBudget, system });
    this.tools = new Map(tools.map((tool) => [tool.name, tool]));
    this.sessions = new Map();
  }

  async ask(text, session = 'default') {
    if (!this.sessions.has(session)) this.sessions.set(session, []);
    const history = this.sessions.get(session);
    history.push({ role: 'user', content: text });
    for (let round = 0; round < 20; round += 1) {
      const { message, calls, reply } = await this.complete(this.fit(history));
      history.push(message);
      if (calls.length === 0) return reply;
      const results = calls.map(({ id, name, args }) => [id, this.tools.get(name).call(args)]);
      if (this.api === 'anthropic') {
        const blocks = results.map(([id, r]) => ({ type: 'tool_result', tool_use_id: id, content: r.text, is_error: r.error }));
        history.push({ role: 'user', content: blocks });
      } else {
        for (const [id, r] of results) history.push({ role: 'tool', tool_call_id: id, content: r.text });
      }
    }
    return 'gave up after 20 rounds';
  }

  /** The history without its oldest turns while it is over the window (a rough count, three
   *  characters a token), cut only where a user's own message starts a turn. */
  fit(history) {
    if (this.window === null) return history;
    const budget = this.window - this.maxOutputTokens - JSON.stringify(this.toolSpecs()).length / 3;
    const starts = history.flatMap((m, i) => (m.role === 'user' && typeof m.content === 'string' ? [i] : []));
    for (const start of starts) {
      const kept = history.slice(start);
      if ((JSON.stringify(kept).length + this.system.length) / 3 <= budget || start === starts.at(-1)) return kept;
    }
    return history;
  }

  toolSpecs() {
    const tools = [...this.tools.values()];
    if (this.api === 'anthropic') return tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
    return tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  }

  /** One answer; a stream cut short is asked again, twice at most. */
  async complete(messages) {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return this.api === 'anthropic' ? await this.anthropic(messages) : await this.openai(messages);
      } catch (error) {
        if (!(error instanceof CutStream) || attempt === 2) throw error;
      }
    }
  }

  async post(route, body, headers) {
    const response = await fetch(`${this.baseUrl}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new ProviderError(response.status, await response.text());
    return response;
  }

  async openai(messages) {
    const system = this.system ? [{ role: 'system', content: this.system }] : [];
    const body = { model: this.model, messages: system.concat(messages), max_tokens: this.maxOutputTokens };
    if (this.tools.size > 0) body.tools = this.toolSpecs();
    if (this.stream) body.stream = true;
    const response = await this.post('/chat/completions', body, { authorization: 'Bearer ctxbed-test' });
    const message = this.stream ? openaiStream(await events(response)) : (await response.json()).choices[0].message;
    const calls = (message.tool_calls || []).map((c) => ({ id: c.id, name: c.function.name, args: c.function.arguments }));
    const kept = { role: 'assistant', content: message.content ?? null };
    if (calls.length > 0) kept.tool_calls = message.tool_calls;
    return { message: kept, calls, reply: message.content || '' };
  }

  async anthropic(messages) {
    const body = { model: this.model, messages, max_tokens: this.maxOutputTokens };
    if (this.system) body.system = this.system;
    if (this.tools.size > 0) body.tools = this.toolSpecs();
    if (this.thinkingBudget) body.thinking = { type: 'enabled', budget_tokens: this.thinkingBudget };
    if (this.stream) body.stream = true;
    const response = await this.post('/v1/messages', body, { 'x-api-key': 'ctxbed-test', 'anthropic-version': '2023-06-01' });
    let blocks = this.stream ? anthropicStream(await events(response)) : (await response.json()).content;
    // Handed back as sent, thinking blocks with their signatures, but never an empty text block.
    blocks = blocks.filter((b) => !(b.type === 'text' && !b.text));
    const calls = blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, args: JSON.stringify(b.input) }));
    const reply = blocks.filter((b) => b.type === 'text').map((b) => b.text).join('');
    return { message: { role: 'assistant', content: blocks }, calls, reply };
  }
}

/** The `data:` payloads of a server-sent event stream; a stream cut short throws `CutStream`. */
async function events(response) {
  let text;
  try {
    text = await response.text();
  } catch (error) {
    throw new CutStream(error.message);
  }
  const lines = text.split('\n');
  if (lines.at(-1) !== '') throw new CutStream('the stream ended within a line');
  return lines.filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim());
}

function openaiStream(payloads) {
  let text = '';
  let finished = false;
  const calls = [];
  for (const payload of payloads) {
    if (payload === '[DONE]') break;
    const choice = (JSON.parse(payload).choices || [{}])[0] || {};
    const delta = choice.delta || {};
    text += delta.content || '';
    for (const part of delta.tool_calls || []) {
      calls[part.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
      const call = calls[part.index];
      call.id = part.id || call.id;
      call.function.name += (part.function && part.function.name) || '';
      call.function.arguments += (part.function && part.function.arguments) || '';
    }
    finished = finished || Boolean(choice.finish_reason);
  }
  if (!finished) throw new CutStream('the stream ended before its finish_reason');
  return { content: text || null, tool_calls: calls.length > 0 ? calls.filter(Boolean) : null };
}

const DELTA_FIELDS = { text_delta: 'text', thinking_delta: 'thinking', signature_delta: 'signature' };

function anthropicStream(payloads) {
  const blocks = [];
  const args = [];
  for (const payload of payloads) {
    const event = JSON.parse(payload);
    if (event.type === 'content_block_start') blocks[event.index] = { ...event.content_block };
    else if (event.type === 'content_block_delta') {
      const { delta } = event;
      if (delta.type === 'input_json_delta') args[event.index] = (args[event.index] || '') + delta.partial_json;
      else {
        const field = DELTA_FIELDS[delta.type];
        blocks[event.index][field] = (blocks[event.index][field] || '') + delta[field];
      }
    } else if (event.type === 'message_stop') {
      args.forEach((text, index) => {
        if (text !== undefined) blocks[index].input = text ? JSON.parse(text) : {};
      });
      return blocks.filter(Boolean);
    }
  }
  throw new CutStream('the stream ended before message_stop');
}

module.exports = { MyAgent };
