"""ctxbed peer adapter for Pydantic AI (`pydantic-ai-slim`). Protocol: docs/peer-protocol.md.

What it configures, and why:
- Model: `OpenAIChatModel` + `OpenAIProvider(base_url=CTXBED_OPENAI_BASE_URL)` (Chat Completions)
  when CTXBED_API=openai, `OpenAIResponsesModel` on the same provider (OpenAI's Responses API)
  when CTXBED_API=responses, `AnthropicModel` + `AnthropicProvider(base_url=CTXBED_ANTHROPIC_BASE_URL)`
  (Messages) when CTXBED_API=anthropic. The model profile gets `context_window=CTXBED_WINDOW`, as
  the docs say to do for custom models. `ModelSettings(max_tokens=CTXBED_MAX_OUTPUT_TOKENS)`; with
  CTXBED_THINKING_BUDGET set, `AnthropicModelSettings(..., anthropic_thinking={"type": "enabled",
  "budget_tokens": N})`, the docs' way of turning on Anthropic's extended thinking.
  Retries and timeouts are Pydantic AI's and the provider clients' defaults.
- Instrumentation off: `Agent.instrument_all(False)`; `run` also disables Logfire/OpenTelemetry.
- Conversations: the documented pattern, `message_history=result.all_messages()`, kept per
  protocol `session`. A failed step leaves its session's history as it was. When CTXBED_STATE_DIR
  is set (a scenario that restarts the harness), each session's history is also kept the way the
  docs store message history: after every successful step `result.all_messages_json()` is written
  to `<CTXBED_STATE_DIR>/<session name in hex>.json` (a temporary file renamed over the old one),
  and the first step of a session in a process loads it with
  `ModelMessagesTypeAdapter.validate_json`, so a new process continues the session with the
  history an uninterrupted one would pass (already trimmed by the recipe below).
- Long conversations (a docs-recipe row): Pydantic AI counts no tokens and has no model-agnostic
  trimming of its own; its docs ("Manage Context Size") give a history processor wrapped as a
  `ProcessHistory` capability, `keep_recent` (the last 10 messages), which is used unchanged. The
  system prompt is passed as `instructions`, which Pydantic AI re-sends on every request rather
  than storing in the history, so trimming cannot lose it.
- Images a step attaches: the user prompt becomes a list, the text and then each image as
  `BinaryContent(data=<decoded bytes>, media_type=...)`, the docs' image input; a step without
  images passes its text as a string, as before.
- Tools: `Tool.from_schema` with the scenario's JSON schema passed through (`strict=False`, so
  Pydantic AI does not rewrite it for OpenAI strict mode). A scripted failure
  raises `ToolFailed`, Pydantic AI's documented way to report a failed tool result to the model
  (Anthropic: `is_error: true`; Chat Completions: content framed as `{"error": ...}`).
- One process serves many scenarios: `ready` and `unsupported` say `"reset": true`; a `reset` line
  drops the agent, its model and provider (with their HTTP client), its tools (with their call
  counts) and every session's history, and takes the next scenario's environment, which the next
  `setup` reads anew (CTXBED_STATE_DIR, or its absence, included).
"""

import asyncio
import base64
import json
import logging
import os
import sys
from importlib.metadata import version
from pathlib import Path

# The protocol's shared environment handling (peers/shared/protocol_env.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shared"))
from protocol_env import apply_env, session_file_name  # noqa: E402
from error_chain import causes  # noqa: E402

# Only protocol lines may reach stdout: keep the real stream for `emit` and send everything else
# (stray prints from libraries included) to stderr.
PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

from pydantic_ai import Agent, BinaryContent, Tool  # noqa: E402
from pydantic_ai import exceptions as pai_errors  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter  # noqa: E402
from pydantic_ai.profiles import ModelProfile  # noqa: E402
from pydantic_ai.settings import ModelSettings  # noqa: E402

# Older releases, which the bug zoo runs through CTXBED_PEER_ENV, lack some of this API; each
# fallback is the older release's own documented way of doing the same thing.
try:
    from pydantic_ai import ToolFailed  # noqa: E402
except ImportError:
    # Before `ToolFailed` a tool reported a failure to the model by raising `ModelRetry` (sent
    # back as a retry prompt carrying the text).
    from pydantic_ai import ModelRetry as ToolFailed  # noqa: E402
try:
    from pydantic_ai.capabilities import ProcessHistory  # noqa: E402
except ImportError:
    # Before capabilities (pydantic-ai < 2), the same processor was passed as
    # `Agent(history_processors=[...])`, the docs' recipe of the time.
    ProcessHistory = None
# A profile's `context_window` came later too: an older release has no way to be told the window
# (it counts no tokens either way), so it gets the provider's own profile, as its users did.
PROFILE_HAS_WINDOW = "context_window" in getattr(ModelProfile, "__annotations__", {})

HARNESS = "pydantic-ai"


def emit(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


# ---- context management: the docs' recipe, unchanged ------------------------------------------
# Pydantic AI counts no tokens and has no model-agnostic trimming of its own. Its docs ("Manage
# Context Size", shipped with the package in .agents/skills/building-pydantic-ai-agents/references/
# INPUT-AND-HISTORY.md) give this processor for trimming long conversations; it is used as written,
# so the row measures the recipe a user would copy, not a trimmer of ours.


async def keep_recent(messages: list[ModelMessage]) -> list[ModelMessage]:
    return messages[-10:] if len(messages) > 10 else messages


# Configurations other than the row's own, for the bug zoo (CTXBED_PEER_VARIANT, see the README);
# never chosen by a scenario.
VARIANTS = ("", "keep-5", "thinking-field")
VARIANT = os.environ.get("CTXBED_PEER_VARIANT", "")


# The `keep-5` variant: the message-history page's "Keep Only Recent Messages" recipe, as written
# there (ai.pydantic.dev/message-history). Its odd count can start the kept part with a tool
# return whose call it cut off, which the row's even count never does.
async def keep_recent_messages(messages: list[ModelMessage]) -> list[ModelMessage]:
    """Keep only the last 5 messages to manage token usage."""
    return messages[-5:] if len(messages) > 5 else messages


def history_processor():
    """The processor the configuration uses: the row's, or its variant's."""
    return keep_recent_messages if VARIANT == "keep-5" else keep_recent


# ---- tools ---------------------------------------------------------------------------------------


def make_tool(spec) -> Tool:
    """A tool that answers its n-th call (over the whole scenario, all sessions) with results[n-1]."""
    name = spec["name"]
    results = spec.get("results") or [{"text": "", "error": False}]
    calls = 0

    async def invoke(**_arguments) -> str:
        nonlocal calls
        calls += 1
        result = results[min(calls, len(results)) - 1]
        if result.get("error"):
            raise ToolFailed(result["text"])
        return result["text"]

    schema = spec.get("parameters") or {"type": "object", "properties": {}}
    tool = Tool.from_schema(invoke, name=name, description=spec.get("description", ""), json_schema=schema)
    # Left to infer (`None`), Pydantic AI turns on OpenAI strict mode for a strict-compatible schema
    # and rewrites it (additionalProperties: false, every property required): send it as given.
    tool.strict = False
    return tool


def make_model():
    """A new model (and provider) for CTXBED_API, from the environment as it is now, or None."""
    api = os.environ.get("CTXBED_API", "openai")
    model = os.environ.get("CTXBED_MODEL", "wire-8k")
    api_key = os.environ.get("CTXBED_API_KEY", "ctxbed-test")
    max_output = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))
    thinking_budget = os.environ.get("CTXBED_THINKING_BUDGET", "")
    settings = ModelSettings(max_tokens=max_output)
    profile = {"context_window": int(os.environ.get("CTXBED_WINDOW", "8000"))} if PROFILE_HAS_WINDOW else None
    if VARIANT == "thinking-field":
        # The `thinking-field` variant: Chat Completions reasoning in a field of the assistant
        # message, `reasoning_content`, read and sent back there, as the OpenAI profile's docs
        # configure DeepSeek-style reasoning (`openai_chat_thinking_field`, `'field'`).
        from pydantic_ai.profiles.openai import OpenAIModelProfile

        fields = {"openai_chat_thinking_field": "reasoning_content", "openai_chat_send_back_thinking_parts": "field"}
        profile = OpenAIModelProfile(**(profile or {}), **fields)
    if api == "openai":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=os.environ["CTXBED_OPENAI_BASE_URL"], api_key=api_key)
        return OpenAIChatModel(model, provider=provider, profile=profile, settings=settings)
    if api == "responses":
        from pydantic_ai.models.openai import OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = OpenAIProvider(base_url=os.environ["CTXBED_OPENAI_BASE_URL"], api_key=api_key)
        return OpenAIResponsesModel(model, provider=provider, profile=profile, settings=settings)
    if api == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel, AnthropicModelSettings
        from pydantic_ai.providers.anthropic import AnthropicProvider

        if thinking_budget.isdigit():
            # Extended thinking, as the docs turn it on for Anthropic (no temperature is set).
            thinking = {"type": "enabled", "budget_tokens": int(thinking_budget)}
            settings = AnthropicModelSettings(max_tokens=max_output, anthropic_thinking=thinking)
        provider = AnthropicProvider(base_url=os.environ["CTXBED_ANTHROPIC_BASE_URL"], api_key=api_key)
        return AnthropicModel(model, provider=provider, profile=profile, settings=settings)
    return None


# ---- the step's prompt ----------------------------------------------------------------------------


def user_prompt(step):
    """The run's user prompt: the step's text as a string, or, when the step attaches images, the
    text and then each image, in order, as `BinaryContent(data=<the file's bytes>, media_type=...)`,
    the docs' way of giving an image as input."""
    images = step.get("images")
    if not images:
        return step["input"]
    return [step["input"]] + [
        BinaryContent(data=base64.b64decode(image["data"]), media_type=image["media_type"]) for image in images
    ]


# ---- error classification ------------------------------------------------------------------------

OVERFLOW_WORDS = ("context_length_exceeded", "context length", "prompt is too long", "context window", "input is too long")


# Exception classes that older releases do not have (an empty tuple matches nothing).
CONTEXT_WINDOW_EXCEEDED = getattr(pai_errors, "ModelContextWindowExceededError", ())
RATE_LIMITED = getattr(pai_errors, "ModelRateLimitError", ())


def classify(exc) -> str:
    for e in causes(exc):
        status = getattr(e, "status_code", None)
        text = (str(e) + " " + json.dumps(getattr(e, "body", None), default=str)).lower()
        # A streamed Responses overflow arrives inside the stream: no status, the error's code.
        if (
            isinstance(e, CONTEXT_WINDOW_EXCEEDED)
            or (status in (400, 413) and any(w in text for w in OVERFLOW_WORDS))
            or getattr(e, "code", None) == "context_length_exceeded"
        ):
            return "context_overflow"
        if isinstance(e, RATE_LIMITED) or status == 429:
            return "rate_limited"
        if isinstance(e, (TimeoutError, asyncio.TimeoutError)) or "Timeout" in type(e).__name__:
            return "timeout"
        if isinstance(status, int):
            return "provider_error"
        if isinstance(e, (pai_errors.UnexpectedModelBehavior, json.JSONDecodeError)) or type(e).__name__ in (
            "ValidationError",
            "APIResponseValidationError",
        ):
            return "malformed_reply"
    return "other"


# ---- sessions on disk (CTXBED_STATE_DIR) ---------------------------------------------------------
# The docs' way of keeping a conversation between runs: the messages as JSON
# (`result.all_messages_json()`), read back with `ModelMessagesTypeAdapter.validate_json`.


def history_path(state_dir, session):
    return os.path.join(state_dir, session_file_name(session) + ".json")


def load_history(state_dir, session):
    """The session's stored history, or None when it has none yet."""
    path = history_path(state_dir, session)
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return ModelMessagesTypeAdapter.validate_json(f.read())


def save_history(state_dir, session, result):
    """Writes the run's messages whole before the step's answer is sent: to a temporary file, then
    renamed over the old one, so a process stopped at any moment leaves the last complete history."""
    os.makedirs(state_dir, exist_ok=True)
    path = history_path(state_dir, session)
    with open(path + ".tmp", "wb") as f:
        f.write(result.all_messages_json())
    os.replace(path + ".tmp", path)


# ---- protocol loop -------------------------------------------------------------------------------


async def drain_events(_ctx, events):
    async for _event in events:
        pass


async def main():
    Agent.instrument_all(False)
    loop = asyncio.get_running_loop()
    # One scenario's state; a `reset` line drops it all.
    agent, unsupported, histories, stream, state_dir = None, None, {}, False, None
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            model = make_model()
            if model is None:
                unsupported = f"CTXBED_API={os.environ.get('CTXBED_API', 'openai')}: this adapter knows only openai, responses and anthropic"
                emit({"type": "unsupported", "reason": unsupported, "reset": True})
                continue
            system = msg.get("system") or None
            tools = [make_tool(t) for t in msg.get("tools", [])]
            if ProcessHistory is not None:
                agent = Agent(model, instructions=system, tools=tools, capabilities=[ProcessHistory(history_processor())])
            else:
                agent = Agent(model, instructions=system, tools=tools, history_processors=[history_processor()])
            stream = os.environ.get("CTXBED_STREAM", "0") == "1"
            state_dir = os.environ.get("CTXBED_STATE_DIR") or None
            emit({"type": "ready", "harness": HARNESS, "version": version("pydantic-ai-slim"), "context": "docs recipe", "reset": True})
        elif msg["type"] == "reset":
            # Nothing of the scenario is kept; no line answers a reset.
            agent, unsupported, histories, stream, state_dir = None, None, {}, False, None
            apply_env(msg.get("env", {}))
        elif msg["type"] == "step":
            step = msg["step"]
            if agent is None:
                emit({"type": "error", "step": step, "kind": "other", "message": unsupported or "step before setup"})
                continue
            session = msg["session"]
            try:
                if state_dir is not None and session not in histories:
                    # The session's first step in this process: continue what an earlier process stored.
                    histories[session] = load_history(state_dir, session)
                result = await agent.run(
                    user_prompt(msg),
                    message_history=histories.get(session),
                    event_stream_handler=drain_events if stream else None,
                )
                histories[session] = result.all_messages()
                if state_dir is not None:
                    save_history(state_dir, session, result)
                output = result.output
                emit({"type": "reply", "step": step, "text": output if isinstance(output, str) else json.dumps(output, default=str)})
            except Exception as exc:  # noqa: BLE001 - every failure becomes a protocol error line
                logging.exception("step %s failed", step)
                emit({"type": "error", "step": step, "kind": classify(exc), "message": str(exc)[:2000]})


if __name__ == "__main__":
    if VARIANT not in VARIANTS:
        sys.exit(f"pydantic-ai adapter: no variant {VARIANT!r} (known: {', '.join(v for v in VARIANTS if v)})")
    asyncio.run(main())
    sys.exit(0)
