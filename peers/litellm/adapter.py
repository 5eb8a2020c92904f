"""ctxbed peer adapter for LiteLLM (`litellm`): a plain tool loop over `litellm.completion`,
trimming the history with `litellm.utils.trim_messages` before every request, as LiteLLM's docs
recommend. Protocol: docs/peer-protocol.md; what it configures and why: this directory's README.

LiteLLM is a client library, not an agent: it has no loop, no sessions and no compaction. Its
docs give the two pieces a user puts together, and the adapter uses them as given:
- the loop of the function-calling docs ("Parallel Function calling"): send the messages and the
  tools, append the assistant's message, run each tool call and append a `tool` message with its
  `tool_call_id`, and ask again until the model answers without tool calls;
- "Trimming Input Messages": `completion(model=model, messages=trim_messages(messages, model))`,
  which trims to `trim_ratio` (0.75, the default) of the model's `max_input_tokens` in LiteLLM's
  model map. The mock's model is not in that map, so the adapter adds it the way LiteLLM's docs
  add a custom model, `litellm.register_model({model: {"max_input_tokens": CTXBED_WINDOW, ...}})`.
The history kept per session is whole; only what each request sends is trimmed.

- Model: `openai/<CTXBED_MODEL>` with `api_base=CTXBED_OPENAI_BASE_URL` (Chat Completions) when
  CTXBED_API=openai, `anthropic/<CTXBED_MODEL>` with `api_base=CTXBED_ANTHROPIC_BASE_URL`
  (Messages) when anthropic; `max_tokens=CTXBED_MAX_OUTPUT_TOKENS`; with CTXBED_THINKING_BUDGET,
  `thinking={"type": "enabled", "budget_tokens": N}` (LiteLLM's reasoning docs), and the
  assistant's `thinking_blocks` are handed back with its tool calls. The Responses API pinned by
  a scenario (CTXBED_API=responses) is not this loop's: `unsupported`.
- Streaming (CTXBED_STREAM=1): `stream=True`, the chunks rebuilt with
  `litellm.stream_chunk_builder(chunks, messages=...)`, as the streaming docs show.
- Retries, timeouts: LiteLLM's defaults.
- One process serves many scenarios: `ready` and `unsupported` say `"reset": true`; a `reset`
  line drops the sessions, the tools (with their call counts) and the settings, and takes the next
  scenario's environment, which the next `setup` reads anew.
"""

import json
import logging
import os
import sys
from importlib.metadata import version
from pathlib import Path

# The protocol's shared environment handling (peers/shared/protocol_env.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shared"))
from protocol_env import apply_env  # noqa: E402

# Only protocol lines may reach stdout: keep the real stream for `emit` and send everything else
# (stray prints from libraries included) to stderr.
PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

import litellm  # noqa: E402
from litellm.utils import trim_messages  # noqa: E402

HARNESS = "litellm"
MAX_ROUNDS = 20  # model calls per step, as an agent's step limit; past it the step is an error


def emit(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


# ---- one scenario's settings ---------------------------------------------------------------------


class Scenario:
    """What a `setup` builds from the environment as it is then: the model, its endpoint, the
    tools (with their call counts), and every session's history."""

    def __init__(self, setup):
        api = os.environ.get("CTXBED_API", "openai")
        self.model_name = os.environ.get("CTXBED_MODEL", "wire-8k")
        if api == "openai":
            self.model = f"openai/{self.model_name}"
            self.api_base = os.environ["CTXBED_OPENAI_BASE_URL"]
        else:  # anthropic
            self.model = f"anthropic/{self.model_name}"
            self.api_base = os.environ["CTXBED_ANTHROPIC_BASE_URL"]
        self.api_key = os.environ.get("CTXBED_API_KEY", "ctxbed-test")
        self.window = int(os.environ.get("CTXBED_WINDOW", "8000"))
        self.max_output = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))
        budget = os.environ.get("CTXBED_THINKING_BUDGET", "")
        self.thinking = {"type": "enabled", "budget_tokens": int(budget)} if budget.isdigit() else None
        self.stream = os.environ.get("CTXBED_STREAM", "0") == "1"
        self.system = setup.get("system") or ""
        self.specs = {t["name"]: t for t in setup.get("tools", [])}
        self.calls = {name: 0 for name in self.specs}
        self.tools = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "parameters": t.get("parameters") or {"type": "object", "properties": {}},
                },
            }
            for t in setup.get("tools", [])
        ]
        self.sessions = {}
        # The model's window, in LiteLLM's model map, where trim_messages reads it.
        litellm.register_model(
            {
                self.model: {
                    "max_input_tokens": self.window,
                    "max_tokens": self.window,
                    "litellm_provider": self.model.split("/")[0],
                    "mode": "chat",
                    # LiteLLM passes `thinking` only to a model its map says can reason; said
                    # either way, so nothing of an earlier scenario's registration lingers.
                    "supports_reasoning": self.thinking is not None,
                }
            }
        )

    def run_tool(self, name):
        """The n-th call of a tool (over the whole scenario, all sessions) gets results[n-1], then
        the last. A plain loop has no error channel: a scripted failure's text is the result."""
        spec = self.specs.get(name)
        if spec is None:
            return f"Error: no tool named {name}"
        results = spec.get("results") or [{"text": "", "error": False}]
        self.calls[name] += 1
        return results[min(self.calls[name], len(results)) - 1]["text"]

    def complete(self, messages):
        """One request: the history trimmed as the docs show, then `litellm.completion`."""
        kwargs = dict(
            model=self.model,
            messages=trim_messages(messages, self.model),
            api_base=self.api_base,
            api_key=self.api_key,
            max_tokens=self.max_output,
        )
        if self.tools:
            kwargs["tools"] = self.tools
        if self.thinking:
            kwargs["thinking"] = self.thinking
        if not self.stream:
            return litellm.completion(**kwargs)
        chunks = list(litellm.completion(stream=True, **kwargs))
        return litellm.stream_chunk_builder(chunks, messages=kwargs["messages"])

    def step(self, msg):
        history = self.sessions.setdefault(msg["session"], [])
        if not history and self.system:
            history.append({"role": "system", "content": self.system})
        history.append(user_message(msg))
        for _ in range(MAX_ROUNDS):
            reply = self.complete(history).choices[0].message
            tool_calls = reply.tool_calls or []
            history.append(assistant_message(reply, tool_calls))
            if not tool_calls:
                return reply.content or ""
            for call in tool_calls:
                history.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "name": call.function.name,
                        "content": self.run_tool(call.function.name),
                    }
                )
        raise RuntimeError(f"no answer after {MAX_ROUNDS} model calls")


def user_message(msg):
    """The step's text, or, with images, the text and then each image as an OpenAI `image_url`
    part with a data URL (LiteLLM turns it into Anthropic's base64 image block)."""
    images = msg.get("images")
    if not images:
        return {"role": "user", "content": msg["input"]}
    parts = [{"type": "text", "text": msg["input"]}]
    for image in images:
        parts.append({"type": "image_url", "image_url": {"url": f"data:{image['media_type']};base64,{image['data']}"}})
    return {"role": "user", "content": parts}


def assistant_message(reply, tool_calls):
    """The assistant's message as the next request needs it: its text, its tool calls and, with
    Anthropic's extended thinking, its thinking blocks."""
    message = {"role": "assistant", "content": reply.content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in tool_calls
        ]
    thinking = getattr(reply, "thinking_blocks", None)
    if thinking:
        message["thinking_blocks"] = thinking
    return message


# ---- error classification ------------------------------------------------------------------------

OVERFLOW_WORDS = ("context_length_exceeded", "maximum context length", "prompt is too long", "context window")


def classify(exc):
    if isinstance(exc, litellm.ContextWindowExceededError):
        return "context_overflow"
    if isinstance(exc, litellm.RateLimitError):
        return "rate_limited"
    if isinstance(exc, litellm.Timeout):
        return "timeout"
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status in (400, 413) and any(w in str(exc).lower() for w in OVERFLOW_WORDS):
            return "context_overflow"
        return "provider_error"
    if isinstance(exc, json.JSONDecodeError):
        return "malformed_reply"
    return "other"


# ---- protocol loop -------------------------------------------------------------------------------


def main():
    scenario = None
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            api = os.environ.get("CTXBED_API", "openai")
            if api not in ("openai", "anthropic"):
                scenario = None
                emit({"type": "unsupported", "reason": f"CTXBED_API={api}: a litellm.completion loop speaks Chat Completions and Anthropic Messages", "reset": True})
                continue
            scenario = Scenario(msg)
            emit({"type": "ready", "harness": HARNESS, "version": version("litellm"), "context": "docs recipe", "reset": True})
        elif msg["type"] == "reset":
            # Nothing of the scenario is kept; no line answers a reset.
            scenario = None
            apply_env(msg.get("env", {}))
        elif msg["type"] == "step":
            if scenario is None:
                emit({"type": "error", "step": msg["step"], "kind": "other", "message": "step before a successful setup"})
                continue
            try:
                emit({"type": "reply", "step": msg["step"], "text": scenario.step(msg)})
            except Exception as exc:  # noqa: BLE001 - every failure becomes a protocol error line
                logging.exception("step %s failed", msg["step"])
                emit({"type": "error", "step": msg["step"], "kind": classify(exc), "message": str(exc)[:2000]})


if __name__ == "__main__":
    main()
    sys.exit(0)
