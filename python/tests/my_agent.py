"""What the README's "Test your harness" example imports as the user's harness: the tiny agent
behind the constructor that example assumes (a base URL, a model, a system prompt, and the
scenario's tools, each with a name, a description, JSON Schema parameters and ``call()``)."""

from __future__ import annotations

from typing import Any, Dict, Sequence

from tiny_agent import TinyAgent


class MyAgent(TinyAgent):
    def __init__(self, base_url: str, model: str, system: str = "", tools: Sequence[Any] = ()) -> None:
        by_name = {tool.name: tool for tool in tools}
        specs = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in tools
        ]

        def run_tool(name: str, arguments: str) -> Dict[str, Any]:
            result = by_name[name].call(arguments)
            return {"text": result.text, "error": result.error}

        super().__init__(base_url, model, specs, run_tool, system)

    def ask(self, text: str, session: str = "default") -> str:
        return self.run(session, text)
