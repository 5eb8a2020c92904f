"""ctxbed peer adapter for the OpenAI Agents SDK (`openai-agents`). Protocol: docs/peer-protocol.md.

What it configures, and why:
- Model: the SDK's default, `OpenAIResponsesModel` (OpenAI's Responses API), over
  `AsyncOpenAI(base_url=CTXBED_OPENAI_BASE_URL)`, for any OpenAI scenario (CTXBED_API=openai or
  responses). The `openai-agents-chat` row runs this same file with CTXBED_AGENTS_MODEL=chat:
  `OpenAIChatCompletionsModel`, Chat Completions, and `unsupported` for a scenario that pins the
  Responses API. `ModelSettings(max_tokens=CTXBED_MAX_OUTPUT_TOKENS)`. Retries and timeouts are
  the SDK's and the OpenAI client's defaults.
- Tracing off: `set_tracing_disabled(True)` here, OPENAI_AGENTS_DISABLE_TRACING=1 in `run`.
- Conversations: one `SQLiteSession` per protocol `session`, the SDK's documented session memory;
  `Runner.run(..., session=...)` prepends the stored history to each step and saves the new items.
  In memory (the SDK's default), or, when CTXBED_STATE_DIR is set (a scenario that restarts the
  harness), the SDK's documented persistent form, `SQLiteSession(session, db_path)` over
  `<CTXBED_STATE_DIR>/agents-sessions.sqlite`: each item is committed as the run saves it, so a new
  process continues every session where the old one left it. The session holds the whole history;
  the docs recipe below trims only what each model call is sent, so it applies the same after a
  restart.
- Long conversations: the SDK has no token-sized trimming of its own (its compaction session,
  `OpenAIResponsesCompactionSession`, needs the Responses API's server-side `responses.compact`,
  which the mock does not serve; `SessionSettings(limit=N)` counts items, not tokens, and can split a tool
  call from its result). Its docs point to `RunConfig.call_model_input_filter` "to stay within a
  token limit", and ship `ToolOutputTrimmer` as a ready-made filter for bulky old tool outputs:
  a docs-recipe row, `ToolOutputTrimmer()` with the SDK's defaults is the filter, unchanged.
- Tools: raw `FunctionTool`s with the scenario's JSON schema passed through untouched
  (`strict_json_schema=False`). The SDK's docs say a hand-made `FunctionTool` must handle its own
  errors, so a scripted failure is returned as the tool output, worded like the SDK's
  `default_tool_error_function` plus the error text.
- Images a step attaches: the run's input becomes one user message, the text as `input_text` and
  each image as `input_image` with a `data:` URL and `detail: "auto"`, the SDK's documented image
  input; a step without images passes its text as a string, as before.
- Anthropic: unsupported. The SDK reaches non-OpenAI APIs only through its LiteLLM or any-llm
  extensions (extra packages); we do not ship them.
- One process serves many scenarios: `ready` and `unsupported` say `"reset": true`; a `reset` line
  closes the client and the sessions, drops the agent, its tools (with their call counts) and the
  run config, and takes the next scenario's environment, which the next `setup` reads anew
  (CTXBED_STATE_DIR, or its absence, included). The adapter sets no SDK-wide default client
  (`set_default_openai_client`), so none outlives a scenario.
"""

import asyncio
import copy
import json
import logging
import os
import sys
from importlib.metadata import version
from pathlib import Path

# The protocol's shared environment handling (peers/shared/protocol_env.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shared"))
from protocol_env import apply_env  # noqa: E402
from error_chain import causes  # noqa: E402

# Only protocol lines may reach stdout: keep the real stream for `emit` and send everything else
# (stray prints from libraries included) to stderr.
PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

import openai  # noqa: E402
from agents import (  # noqa: E402
    Agent,
    FunctionTool,
    ModelBehaviorError,
    ModelSettings,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SQLiteSession,
    set_tracing_disabled,
)
try:
    from agents.extensions import ToolOutputTrimmer  # noqa: E402
except ImportError:
    # Releases before ToolOutputTrimmer (run by the bug zoo through CTXBED_PEER_ENV) shipped no
    # ready-made filter: the run goes unfiltered, and `ready` says the context is "none".
    ToolOutputTrimmer = None

# Set by `run` (not a protocol variable), so the same for every scenario of the process.
CHAT = os.environ.get("CTXBED_AGENTS_MODEL", "responses") == "chat" or os.environ.get("CTXBED_PEER_VARIANT") == "chat"
HARNESS = "openai-agents-chat" if CHAT else "openai-agents"


def emit(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


# ---- context management: the SDK's documented filter, unchanged -----------------------------
# The SDK counts no tokens. Its ready-made `call_model_input_filter` is `ToolOutputTrimmer`
# (agents.extensions, "Built-in call_model_input_filter that trims large tool outputs from older
# turns"); it runs with the SDK's defaults (2 recent turns kept whole), so the row measures what
# the SDK ships, not a trimmer of ours. A new one per scenario, in its RunConfig (see `main`).


# ---- tools ---------------------------------------------------------------------------------------


# A step line's `interrupt`: the step runs a clone of the agent whose tools need the SDK's own
# human-in-the-loop approval (`needs_approval=True`), never given: the run ends with the call in
# `result.interruptions`, the session holding what the SDK saved of the turn, and the next step is
# a new input in the same session with the row's own agent. Every other step runs the row's agent,
# whose tools ask for no approval (a `needs_approval` policy, even one that answers no, would make
# the SDK hold a call with invalid arguments for approval). Releases before tool approval (the bug
# zoo's older ones) declare no `interrupts`.
APPROVALS = "needs_approval" in getattr(FunctionTool, "__dataclass_fields__", {})


def stopping_at_tool_calls(agent):
    """The agent with every tool needing an approval; the tools share the row's call counts."""
    import dataclasses

    return agent.clone(tools=[dataclasses.replace(tool, needs_approval=True) for tool in agent.tools])


def make_tool(spec) -> FunctionTool:
    """A tool that answers its n-th call (over the whole scenario, all sessions) with results[n-1]."""
    name = spec["name"]
    results = spec.get("results") or [{"text": "", "error": False}]
    calls = 0

    async def invoke(_ctx, _arguments: str) -> str:
        nonlocal calls
        calls += 1
        result = results[min(calls, len(results)) - 1]
        if result.get("error"):
            return f"An error occurred while running the tool. Please try again. Error: {result['text']}"
        return result["text"]

    return FunctionTool(
        name=name,
        description=spec.get("description", ""),
        params_json_schema=copy.deepcopy(spec.get("parameters") or {"type": "object", "properties": {}}),
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


# ---- the step's input ----------------------------------------------------------------------------


def run_input(step):
    """The run's input: the step's text as a string, or, when the step attaches images, one user
    message whose content is the text and then each image, in order, as the SDK's docs give image
    input (an `input_image` with a data URL; the SDK sends it as such on the Responses API and as
    an `image_url` part on Chat Completions)."""
    images = step.get("images")
    if not images:
        return step["input"]
    content = [{"type": "input_text", "text": step["input"]}] + [
        {"type": "input_image", "image_url": f"data:{image['media_type']};base64,{image['data']}", "detail": "auto"}
        for image in images
    ]
    return [{"role": "user", "content": content}]


# ---- error classification ------------------------------------------------------------------------

OVERFLOW_WORDS = ("context_length_exceeded", "context length", "prompt is too long", "context window", "input is too long")


def classify(exc) -> str:
    for e in causes(exc):
        status = getattr(e, "status_code", None)
        text = (str(e) + " " + json.dumps(getattr(e, "body", None), default=str)).lower()
        if status in (400, 413) and any(w in text for w in OVERFLOW_WORDS):
            return "context_overflow"
        # The Responses API reports a streamed overflow inside the stream: an APIError with no
        # status, carrying the error's code.
        if getattr(e, "code", None) == "context_length_exceeded":
            return "context_overflow"
        if isinstance(e, openai.RateLimitError) or status == 429:
            return "rate_limited"
        if isinstance(e, (openai.APITimeoutError, TimeoutError, asyncio.TimeoutError)) or "Timeout" in type(e).__name__:
            return "timeout"
        if isinstance(status, int):
            return "provider_error"
        if isinstance(e, (ModelBehaviorError, openai.APIResponseValidationError, json.JSONDecodeError)):
            return "malformed_reply"
    return "other"


# ---- sessions ------------------------------------------------------------------------------------


# Configurations other than the row's own, for the bug zoo (CTXBED_PEER_VARIANT, see the README);
# never chosen by a scenario.
VARIANTS = ("", "session-limit", "chat")
VARIANT = os.environ.get("CTXBED_PEER_VARIANT", "")
# The `session-limit` variant's `SessionSettings(limit=…)`: the last 10 items of a session, a
# round number (the SDK's docs give no default); the row keeps whole sessions.
SESSION_LIMIT = 10


def open_session(session_id, state_dir):
    """The session's store: the SDK's `SQLiteSession`, in memory, or, with a state directory, in
    its file there (one file for every session, keyed by the protocol's session name); with the
    `session-limit` variant, reading only its last SESSION_LIMIT items."""
    extra = {}
    if VARIANT == "session-limit":
        from agents.memory import SessionSettings

        extra["session_settings"] = SessionSettings(limit=SESSION_LIMIT)
    if state_dir is None:
        return SQLiteSession(session_id, **extra)  # in memory
    os.makedirs(state_dir, exist_ok=True)
    return SQLiteSession(session_id, os.path.join(state_dir, "agents-sessions.sqlite"), **extra)


# ---- protocol loop -------------------------------------------------------------------------------


async def main():
    set_tracing_disabled(True)
    loop = asyncio.get_running_loop()
    # One scenario's state; a `reset` line drops it all. The settings are read from the
    # environment at each setup.
    agent, unsupported, client, sessions, run_config, stream = None, None, None, {}, None, False
    state_dir = None
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            for session in sessions.values():
                session.close()
            return
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            api = os.environ.get("CTXBED_API", "openai")
            if api not in ("openai", "responses"):
                unsupported = (
                    f"CTXBED_API={api}: the Agents SDK speaks only OpenAI APIs natively; Anthropic "
                    "Messages needs its LiteLLM or any-llm extension, which this peer does not install"
                )
                emit({"type": "unsupported", "reason": unsupported, "reset": True})
                continue
            if CHAT and api == "responses":
                unsupported = "CTXBED_API=responses: this row is the SDK on Chat Completions"
                emit({"type": "unsupported", "reason": unsupported, "reset": True})
                continue
            client = openai.AsyncOpenAI(base_url=os.environ["CTXBED_OPENAI_BASE_URL"], api_key=os.environ.get("CTXBED_API_KEY", "ctxbed-test"))
            model_name = os.environ.get("CTXBED_MODEL", "wire-8k")
            max_output = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))
            stream = os.environ.get("CTXBED_STREAM", "0") == "1"
            state_dir = os.environ.get("CTXBED_STATE_DIR") or None
            tools = [make_tool(t) for t in msg.get("tools", [])]
            agent = Agent(
                name="ctxbed",
                instructions=msg.get("system") or None,
                model=(OpenAIChatCompletionsModel if CHAT else OpenAIResponsesModel)(model=model_name, openai_client=client),
                model_settings=ModelSettings(max_tokens=max_output),
                tools=tools,
            )
            if ToolOutputTrimmer is not None:
                run_config = RunConfig(call_model_input_filter=ToolOutputTrimmer(), tracing_disabled=True)
                context = "docs recipe"
            else:
                run_config = RunConfig(tracing_disabled=True)
                context = "none"
            emit({"type": "ready", "harness": HARNESS, "version": version("openai-agents"), "context": context, "reset": True, "interrupts": APPROVALS})
        elif msg["type"] == "reset":
            # Nothing of the scenario is kept; no line answers a reset.
            for session in sessions.values():
                session.close()
            if client is not None:
                await client.close()
            agent, unsupported, client, sessions, run_config, stream = None, None, None, {}, None, False
            state_dir = None
            apply_env(msg.get("env", {}))
        elif msg["type"] == "step":
            step = msg["step"]
            if agent is None:
                emit({"type": "error", "step": step, "kind": "other", "message": unsupported or "step before setup"})
                continue
            try:
                session = sessions.get(msg["session"])
                if session is None:
                    session = sessions[msg["session"]] = open_session(msg["session"], state_dir)
                step_input = run_input(msg)
                runner = stopping_at_tool_calls(agent) if msg.get("interrupt") else agent
                if stream:
                    result = Runner.run_streamed(runner, step_input, session=session, run_config=run_config)
                    async for _event in result.stream_events():
                        pass
                else:
                    result = await Runner.run(runner, step_input, session=session, run_config=run_config)
                if getattr(result, "interruptions", None):
                    # Stopped at the call, its approval never given; the next step moves on.
                    emit({"type": "interrupted", "step": step})
                    continue
                output = result.final_output
                emit({"type": "reply", "step": step, "text": output if isinstance(output, str) else json.dumps(output, default=str)})
            except Exception as exc:  # noqa: BLE001 - every failure becomes a protocol error line
                logging.exception("step %s failed", step)
                emit({"type": "error", "step": step, "kind": classify(exc), "message": str(exc)[:2000]})


if __name__ == "__main__":
    if VARIANT not in VARIANTS:
        sys.exit(f"openai-agents adapter: no variant {VARIANT!r} (known: {', '.join(v for v in VARIANTS if v)})")
    asyncio.run(main())
    sys.exit(0)
