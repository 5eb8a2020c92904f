"""What the README's "Test your harness" example imports as the user's harness: a small agent
loop (urllib only) configured as a user configures theirs, from what the run gives: the API
(OpenAI Chat Completions or Anthropic Messages, each with its own client), the base URL, the
model, the context window (old turns are dropped to fit it), the output budget, streaming (a
stream cut short is asked again), Anthropic's thinking budget, the system prompt and the
scenario's tools (each with a name, a description, JSON Schema parameters and ``call()``)."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from tiny_agent import ProviderError

#: A tool call as both APIs give it: its id, its name, its arguments (JSON text).
Call = Tuple[str, str, str]


class CutStream(Exception):
    """A streamed answer that ended before its last event."""


class MyAgent:
    def __init__(
        self,
        api: str,
        base_url: str,
        model: str,
        window: Optional[int] = None,
        max_output_tokens: int = 1024,
        stream: bool = False,
        thinking_budget: Optional[int] = None,
        system: str = "",
        tools: Sequence[Any] = (),
    ) -> None:
        if api not in ("openai", "anthropic"):
            raise ValueError(f"MyAgent speaks OpenAI Chat Completions and Anthropic Messages, not {api!r}")
        self.api, self.base_url, self.model = api, base_url.rstrip("/"), model
        self.window, self.max_output_tokens, self.stream = window, max_output_tokens, stream
        self.thinking_budget, self.system = thinking_budget, system
        self.tools = {tool.name: tool for tool in tools}
        self.sessions: Dict[str, List[Dict[str, Any]]] = {}

    def ask(self, text: str, session: str = "default") -> str:
        history = self.sessions.setdefault(session, [])
        history.append({"role": "user", "content": text})
        for _ in range(20):
            message, calls, reply = self._complete(self._fit(history))
            history.append(message)
            if not calls:
                return reply
            results = [(call_id, self.tools[name].call(arguments)) for call_id, name, arguments in calls]
            if self.api == "anthropic":
                blocks = [
                    {"type": "tool_result", "tool_use_id": call_id, "content": r.text, "is_error": r.error}
                    for call_id, r in results
                ]
                history.append({"role": "user", "content": blocks})
            else:
                history.extend({"role": "tool", "tool_call_id": call_id, "content": r.text} for call_id, r in results)
        return "gave up after 20 rounds"

    def _fit(self, history: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """The history without its oldest turns while it is over the window (a rough count,
        three characters a token), cut only where a user's own message starts a turn."""
        if self.window is None:
            return history
        budget = self.window - self.max_output_tokens - len(json.dumps(self._tool_specs())) // 3
        starts = [i for i, m in enumerate(history) if m["role"] == "user" and isinstance(m["content"], str)]
        for start in starts:
            kept = history[start:]
            if len(json.dumps(kept)) // 3 + len(self.system) // 3 <= budget or start == starts[-1]:
                return kept
        return history

    def _tool_specs(self) -> List[Dict[str, Any]]:
        if self.api == "anthropic":
            return [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in self.tools.values()]
        return [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in self.tools.values()
        ]

    def _complete(self, messages: List[Dict[str, Any]]) -> Tuple[Dict[str, Any], List[Call], str]:
        """One answer: the assistant message to keep, its tool calls and its text. A stream cut
        short is asked again, twice at most."""
        for attempt in range(3):
            try:
                if self.api == "anthropic":
                    return self._anthropic(messages)
                return self._openai(messages)
            except CutStream:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _post(self, path: str, body: Dict[str, Any], headers: Dict[str, str]) -> Any:
        request = urllib.request.Request(
            f"{self.base_url}{path}", data=json.dumps(body).encode(),
            headers={"content-type": "application/json", **headers},
        )
        try:
            return urllib.request.urlopen(request, timeout=60)
        except urllib.error.HTTPError as error:
            raise ProviderError(error.code, error.read().decode(errors="replace")) from None

    def _openai(self, messages: List[Dict[str, Any]]) -> Tuple[Dict[str, Any], List[Call], str]:
        system = [{"role": "system", "content": self.system}] if self.system else []
        body: Dict[str, Any] = {"model": self.model, "messages": system + messages, "max_tokens": self.max_output_tokens}
        if self.tools:
            body["tools"] = self._tool_specs()
        if self.stream:
            body["stream"] = True
        with self._post("/chat/completions", body, {"authorization": "Bearer ctxbed-test"}) as response:
            message = _openai_stream(events(response)) if self.stream else json.load(response)["choices"][0]["message"]
        calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or []]
        kept = {"role": "assistant", "content": message.get("content")}
        if calls:
            kept["tool_calls"] = message["tool_calls"]
        return kept, calls, message.get("content") or ""

    def _anthropic(self, messages: List[Dict[str, Any]]) -> Tuple[Dict[str, Any], List[Call], str]:
        body: Dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": self.max_output_tokens}
        if self.system:
            body["system"] = self.system
        if self.tools:
            body["tools"] = self._tool_specs()
        if self.thinking_budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        if self.stream:
            body["stream"] = True
        headers = {"x-api-key": "ctxbed-test", "anthropic-version": "2023-06-01"}
        with self._post("/v1/messages", body, headers) as response:
            blocks = _anthropic_stream(events(response)) if self.stream else json.load(response)["content"]
        # Handed back as sent, thinking blocks with their signatures, but never an empty text block.
        blocks = [b for b in blocks if not (b["type"] == "text" and not b["text"])]
        calls = [(b["id"], b["name"], json.dumps(b["input"])) for b in blocks if b["type"] == "tool_use"]
        reply = "".join(b["text"] for b in blocks if b["type"] == "text")
        return {"role": "assistant", "content": blocks}, calls, reply


def events(response: Any) -> Iterator[str]:
    """The ``data:`` payloads of a server-sent event stream; a stream cut short raises
    :class:`CutStream` (after the payloads that arrived)."""
    try:
        for line in response:
            if not line.endswith(b"\n"):
                raise CutStream("the stream ended within a line")
            if line.startswith(b"data:"):
                yield line[5:].strip().decode()
    except (http.client.HTTPException, OSError) as error:
        raise CutStream(str(error)) from None


def _openai_stream(payloads: Iterator[str]) -> Dict[str, Any]:
    text, calls, finished = "", {}, False
    for payload in payloads:
        if payload == "[DONE]":
            break
        choice = (json.loads(payload).get("choices") or [{}])[0]
        delta = choice.get("delta") or {}
        text += delta.get("content") or ""
        for part in delta.get("tool_calls") or []:
            call = calls.setdefault(part["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            call["id"] = part.get("id") or call["id"]
            function = part.get("function") or {}
            call["function"]["name"] += function.get("name") or ""
            call["function"]["arguments"] += function.get("arguments") or ""
        finished = finished or bool(choice.get("finish_reason"))
    if not finished:
        raise CutStream("the stream ended before its finish_reason")
    return {"content": text or None, "tool_calls": [calls[i] for i in sorted(calls)] or None}


def _anthropic_stream(payloads: Iterator[str]) -> List[Dict[str, Any]]:
    blocks: Dict[int, Dict[str, Any]] = {}
    arguments: Dict[int, str] = {}
    for payload in payloads:
        event = json.loads(payload)
        if event["type"] == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif event["type"] == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            kind = delta["type"]
            if kind == "input_json_delta":
                arguments[event["index"]] = arguments.get(event["index"], "") + delta["partial_json"]
            else:  # text_delta, thinking_delta, signature_delta: the field of the same name grows
                field = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}[kind]
                block[field] = block.get(field, "") + delta[field]
        elif event["type"] == "message_stop":
            for index, text in arguments.items():
                blocks[index]["input"] = json.loads(text) if text else {}
            return [blocks[i] for i in sorted(blocks)]
    raise CutStream("the stream ended before message_stop")
