'use strict';
// What the README's "Test your harness" example requires as the user's harness: the tiny agent
// behind the constructor that example assumes (a base URL, a model, a system prompt, and the
// scenario's tools, each with a name, a description, JSON Schema parameters and `call()`).

const { TinyAgent } = require('./tiny-agent');

class MyAgent extends TinyAgent {
  constructor({ baseUrl, model, system = '', tools = [] }) {
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    super({
      baseUrl,
      model,
      system,
      tools: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
      runTool: (name, args) => byName.get(name).call(args),
    });
  }

  ask(text, session = 'default') {
    return super.ask(session, text);
  }
}

module.exports = { MyAgent };
