"""What the LangChain-family adapters (peers/langchain, peers/deepagents) share: protocol output
on a private copy of standard output, the chat model for CTXBED_API, tools that return the
scenario's scripted results, the reading of provider exceptions as protocol error kinds, and the
protocol loop. Each adapter supplies only how it builds its agent (see docs/peer-protocol.md).

Importing this module first moves file descriptor 1 to standard error, so nothing a library
prints can reach the protocol stream.
"""
import json
import logging
import os
import sys
import threading
import traceback

_protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

from importlib.metadata import version  # noqa: E402

from langchain_core.exceptions import ContextOverflowError  # noqa: E402
from langchain_core.tools import StructuredTool, ToolException  # noqa: E402


def send(obj):
    _protocol.write(json.dumps(obj) + "\n")
    _protocol.flush()


def build_model():
    """The chat model for CTXBED_API, or None when this adapter cannot speak it."""
    env = os.environ
    api = env.get("CTXBED_API")
    if api not in ("openai", "anthropic"):
        return None
    common = dict(
        model=env["CTXBED_MODEL"],
        api_key=env["CTXBED_API_KEY"],
        max_tokens=int(env["CTXBED_MAX_OUTPUT_TOKENS"]),
        streaming=env.get("CTXBED_STREAM") == "1",
        profile={
            "max_input_tokens": int(env["CTXBED_WINDOW"]),
            "max_output_tokens": int(env["CTXBED_MAX_OUTPUT_TOKENS"]),
        },
    )
    if api == "openai":
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(base_url=env["CTXBED_OPENAI_BASE_URL"], **common)
    from langchain_anthropic import ChatAnthropic

    return ChatAnthropic(base_url=env["CTXBED_ANTHROPIC_BASE_URL"], **common)


def build_tool(spec, lock):
    """A tool that answers its n-th call (over the whole scenario) with results[n-1]."""
    results = spec.get("results") or [{"text": "", "error": False}]
    calls = 0

    def run(**_arguments):
        nonlocal calls
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


def _chain(exc):
    """The exception and everything behind it: causes, contexts, group members (breadth first)."""
    seen, queue = [], [exc]
    while queue:
        e = queue.pop(0)
        if e is None or any(e is s for s in seen):
            continue
        seen.append(e)
        queue += [e.__cause__, e.__context__]
        if isinstance(e, BaseExceptionGroup):
            queue += list(e.exceptions)
    return seen


def _provider_kind(e):
    """The error kind of one provider SDK exception, or None if `e` is not one."""
    import anthropic
    import openai

    def has(*names):
        return tuple(getattr(m, n) for m in (openai, anthropic) for n in names)

    if isinstance(e, has("APIResponseValidationError")):
        return "malformed_reply"
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
    chain = _chain(exc)
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


# --- main loop --------------------------------------------------------------------------------


def main(harness, package, build_agent):
    """Speaks the protocol on standard input and output until input ends."""
    agent = None
    for line in iter(sys.stdin.readline, ""):
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            model = build_model()
            if model is None:
                send({"type": "unsupported", "reason": f"no client for CTXBED_API={os.environ.get('CTXBED_API')!r}"})
                continue
            agent = build_agent(msg, model)
            send({"type": "ready", "harness": harness, "version": version(package)})
        elif msg["type"] == "step":
            step = msg["step"]
            try:
                if agent is None:
                    raise RuntimeError("step before a successful setup")
                result = agent.invoke(
                    {"messages": [{"role": "user", "content": msg["input"]}]},
                    {"configurable": {"thread_id": msg["session"]}, "metadata": {"user_id": msg.get("user")}},
                )
                send({"type": "reply", "step": step, "text": result["messages"][-1].text})
            except Exception as exc:  # noqa: BLE001 - every failure is reported on the protocol
                traceback.print_exc(file=sys.stderr)
                kind, message = classify(exc)
                send({"type": "error", "step": step, "kind": kind, "message": message[:2000]})
        else:
            print(f"{harness} adapter: ignoring line of type {msg.get('type')!r}", file=sys.stderr)
