"""A deliberately small agent loop over OpenAI Chat Completions (urllib only), standing in for
a user's harness in the examples: it keeps each session's messages, offers the tools, runs every
tool call it gets and sends the results back. It manages no context at all, so it passes short
scenarios and overflows long ones. ``drop_tool_results=True`` plants a pairing bug."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Callable, Dict, List


class ProviderError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


class TinyAgent:
    def __init__(
        self,
        base_url: str,
        model: str,
        tools: List[Dict[str, Any]],
        run_tool: Callable[[str, str], Dict[str, Any]],
        system: str = "",
        max_tokens: int = 1024,
        drop_tool_results: bool = False,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.tools = tools
        self.run_tool = run_tool
        self.system = system
        self.max_tokens = max_tokens
        self.drop_tool_results = drop_tool_results
        self.sessions: Dict[str, List[Dict[str, Any]]] = {}

    def _post(self, messages: List[Dict[str, Any]]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_tokens}
        if self.tools:
            body["tools"] = self.tools
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json", "authorization": "Bearer ctxbed-test"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise ProviderError(error.code, error.read().decode(errors="replace")) from None

    def run(self, session: str, text: str) -> str:
        history = self.sessions.setdefault(session, [])
        history.append({"role": "user", "content": text})
        for _ in range(20):
            system = [{"role": "system", "content": self.system}] if self.system else []
            sent = system + [m for m in history if not (self.drop_tool_results and m["role"] == "tool")]
            message = self._post(sent)["choices"][0]["message"]
            history.append({k: v for k, v in message.items() if v is not None})
            calls = message.get("tool_calls") or []
            if not calls:
                return message.get("content") or ""
            for call in calls:
                result = self.run_tool(call["function"]["name"], call["function"]["arguments"])
                history.append({"role": "tool", "tool_call_id": call["id"], "content": result["text"]})
        return "gave up after 20 rounds"
