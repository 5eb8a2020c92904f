'use strict';
// A deliberately small agent loop over OpenAI Chat Completions (fetch only), standing in for a
// user's harness: it keeps each session's messages, offers the tools, runs every tool call and
// sends the results back. It manages no context, so it passes short scenarios and overflows
// long ones. `dropToolResults` plants a pairing bug.

class ProviderError extends Error {
  constructor(status, body) {
    super(`HTTP ${status}: ${body}`);
    this.status = status;
    this.body = body;
  }
}

class TinyAgent {
  constructor({ baseUrl, model, tools, runTool, system = '', maxTokens = 1024, dropToolResults = false }) {
    Object.assign(this, { baseUrl: baseUrl.replace(/\/$/, ''), model, tools, runTool, system, maxTokens, dropToolResults });
    this.sessions = new Map();
  }

  async post(messages) {
    const body = { model: this.model, messages, max_tokens: this.maxTokens };
    if (this.tools.length > 0) body.tools = this.tools;
    const response = await fetch(`${this.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ctxbed-test' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new ProviderError(response.status, text);
    return JSON.parse(text);
  }

  async ask(session, text) {
    if (!this.sessions.has(session)) this.sessions.set(session, []);
    const history = this.sessions.get(session);
    history.push({ role: 'user', content: text });
    for (let round = 0; round < 20; round += 1) {
      const system = this.system ? [{ role: 'system', content: this.system }] : [];
      const sent = system.concat(history.filter((m) => !(this.dropToolResults && m.role === 'tool')));
      const message = (await this.post(sent)).choices[0].message;
      history.push(Object.fromEntries(Object.entries(message).filter(([, v]) => v !== null)));
      const calls = message.tool_calls || [];
      if (calls.length === 0) return message.content || '';
      for (const call of calls) {
        const result = this.runTool(call.function.name, call.function.arguments);
        history.push({ role: 'tool', tool_call_id: call.id, content: result.text });
      }
    }
    return 'gave up after 20 rounds';
  }
}

module.exports = { ProviderError, TinyAgent };
