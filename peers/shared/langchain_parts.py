"""The LangChain-family pieces with no side effect on import: the chat model for CTXBED_API,
the checkpointer that keeps the sessions (in memory, or on disk under CTXBED_STATE_DIR), the
content of a step's user message, tools that return the scenario's scripted results, and the
reading of provider exceptions as protocol error kinds. `langchain_family` (the protocol
adapters) and the pytest port (`peers/langchain/test_plugin.py`) both build on them.
"""
import json
import os

try:
    from langchain_core.exceptions import ContextOverflowError
except ImportError:
    # Older langchain-core has no ContextOverflowError (langchain-ai/langchain#35099 added it in the
    # 1.2 line; 1.1.1 lacks it, 1.2.10 has it): nothing there raises one, so a class nothing raises
    # stands in for it (the bug zoo runs older versions through CTXBED_PEER_ENV).
    class ContextOverflowError(Exception):
        pass
from langchain_core.tools import StructuredTool, ToolException

from error_chain import causes


def _has_profiles():
    """Whether chat models take a `profile` (langchain-core 1.1 added model profiles; before it,
    ChatOpenAI would pass an unknown `profile` on to the API, and a model cannot be told its window)."""
    from langchain_core.language_models import BaseChatModel

    return "profile" in BaseChatModel.model_fields


def build_model(env=None):
    """The chat model for CTXBED_API in `env` (the process environment by default), or None
    when this adapter cannot speak it."""
    env = os.environ if env is None else env
    api = env.get("CTXBED_API")
    if api not in ("openai", "responses", "anthropic"):
        return None
    common = dict(
        model=env["CTXBED_MODEL"],
        api_key=env["CTXBED_API_KEY"],
        max_tokens=int(env["CTXBED_MAX_OUTPUT_TOKENS"]),
        streaming=env.get("CTXBED_STREAM") == "1",
    )
    if _has_profiles():
        common["profile"] = {
            "max_input_tokens": int(env["CTXBED_WINDOW"]),
            "max_output_tokens": int(env["CTXBED_MAX_OUTPUT_TOKENS"]),
        }
    if api in ("openai", "responses"):
        from langchain_openai import ChatOpenAI

        # `responses`: ChatOpenAI's own switch to OpenAI's Responses API.
        return ChatOpenAI(base_url=env["CTXBED_OPENAI_BASE_URL"], use_responses_api=api == "responses", **common)
    from langchain_anthropic import ChatAnthropic

    # Extended thinking when the scenario turns it on: ChatAnthropic's `thinking` parameter, within
    # `max_tokens` (above). No temperature is set, as thinking requires.
    budget = env.get("CTXBED_THINKING_BUDGET", "")
    thinking = {"type": "enabled", "budget_tokens": int(budget)} if budget.isdigit() else None
    return ChatAnthropic(base_url=env["CTXBED_ANTHROPIC_BASE_URL"], thinking=thinking, **common)


def build_checkpointer(env=None):
    """The checkpointer that keeps every session (a LangGraph thread per protocol `session`), from
    `env` (the process environment by default): `InMemorySaver` as before, or, when
    CTXBED_STATE_DIR is set (a scenario that restarts the harness), LangGraph's persistent
    `SqliteSaver` over `<CTXBED_STATE_DIR>/langgraph-checkpoints.sqlite`, set up as its docs show
    (`SqliteSaver(sqlite3.connect(path, check_same_thread=False))`). The agent is invoked
    synchronously, so the synchronous saver; it commits each checkpoint as it writes it, so a new
    process continues every thread, summaries included, where the old one left it. Close it with
    `close_checkpointer`."""
    env = os.environ if env is None else env
    state_dir = env.get("CTXBED_STATE_DIR")
    if not state_dir:
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver()
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    os.makedirs(state_dir, exist_ok=True)
    path = os.path.join(state_dir, "langgraph-checkpoints.sqlite")
    return SqliteSaver(sqlite3.connect(path, check_same_thread=False))


def close_checkpointer(checkpointer):
    """Closes a `SqliteSaver`'s connection (an `InMemorySaver` has none)."""
    conn = getattr(checkpointer, "conn", None)
    if conn is not None:
        conn.close()


def user_content(step):
    """The content of a step's user message: its text as a plain string, or, when the step
    attaches images, a list of LangChain's standard content blocks, the text and then each image
    in order (`{"type": "image", "base64": ..., "mime_type": ...}`, LangChain's documented
    multimodal input, which ChatOpenAI turns into an `image_url` part or an `input_image` item and
    ChatAnthropic into an `image` block with a base64 source)."""
    images = step.get("images")
    if not images:
        return step["input"]
    return [{"type": "text", "text": step["input"]}] + [
        {"type": "image", "base64": image["data"], "mime_type": image["media_type"]} for image in images
    ]


class StepInterrupt:
    """Whether the current step stops at its first tool call (a step line's `interrupt`), and
    whether it did. The tools stop it with LangGraph's own human-in-the-loop `interrupt()`,
    before counting or running the call: the graph pauses with the AI message's tool calls in
    the thread and no ToolMessage for them, as a human who never approves leaves it."""

    asked = False
    happened = False

    @classmethod
    def begin(cls, step):
        cls.asked, cls.happened = bool(step.get("interrupt")), False


def build_tool(spec, lock):
    """A tool that answers its n-th call (over the whole scenario) with results[n-1], or stops
    the run at the call when the step asks for an interrupt (`StepInterrupt`)."""
    results = spec.get("results") or [{"text": "", "error": False}]
    calls = 0

    def run(**_arguments):
        nonlocal calls
        if StepInterrupt.asked:
            from langgraph.types import interrupt

            StepInterrupt.happened = True
            interrupt({"tool": spec["name"], "reason": "the step stops at its first tool call"})
        with lock:
            calls += 1
            result = results[min(calls, len(results)) - 1]
        if result.get("error"):
            raise ToolException(result.get("text", ""))
        return result.get("text", "")

    return StructuredTool(
        name=spec["name"],
        description=spec.get("description") or spec["name"],
        args_schema=spec.get("parameters") or {"type": "object", "properties": {}},
        func=run,
        handle_tool_error=True,
    )


# --- errors -----------------------------------------------------------------------------------

_OVERFLOW_MARKERS = ("context_length_exceeded", "prompt is too long", "maximum context length")


def _provider_kind(e):
    """The error kind of one provider SDK exception, or None if `e` is not one."""
    import anthropic
    import openai

    def has(*names):
        return tuple(getattr(m, n) for m in (openai, anthropic) for n in names)

    if isinstance(e, has("APIResponseValidationError")):
        return "malformed_reply"
    # A streamed Responses overflow arrives inside the stream: an APIError with no status,
    # carrying the error's code.
    if isinstance(e, has("APIError")) and getattr(e, "code", None) == "context_length_exceeded":
        return "context_overflow"
    if isinstance(e, has("APIStatusError")) and e.status_code in (400, 413):
        text = " ".join([str(e), json.dumps(getattr(e, "body", None), default=str), str(getattr(e, "code", ""))])
        if isinstance(e, ContextOverflowError) or any(m in text.lower() for m in _OVERFLOW_MARKERS):
            return "context_overflow"
    if isinstance(e, has("RateLimitError")):
        return "rate_limited"
    if isinstance(e, has("APITimeoutError")):
        return "timeout"
    if isinstance(e, has("APIStatusError")):
        return "provider_error"
    return None


def classify(exc):
    """(kind, message) for an exception raised by a step."""
    chain = list(causes(exc))
    for e in chain:
        kind = _provider_kind(e)
        if kind:
            return kind, str(e)
    for e in chain:
        if isinstance(e, ContextOverflowError):  # raised by the harness itself, nothing sent
            return "budget_refused", str(e)
        if isinstance(e, json.JSONDecodeError) or str(e).startswith("No generations found in stream"):
            return "malformed_reply", str(e)  # unparseable body, or a stream with no events
    return "other", str(exc) or type(exc).__name__
