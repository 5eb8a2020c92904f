"""ctxbed peer adapter for the OpenAI Agents SDK (`openai-agents`). Protocol: docs/peer-protocol.md.

What it configures, and why:
- Model: `OpenAIChatCompletionsModel` over `AsyncOpenAI(base_url=CTXBED_OPENAI_BASE_URL)`, so the
  SDK speaks Chat Completions to the mock (its default would be the Responses API).
  `ModelSettings(max_tokens=CTXBED_MAX_OUTPUT_TOKENS)`. Retries and timeouts are the SDK's and the
  OpenAI client's defaults.
- Tracing off: `set_tracing_disabled(True)` here, OPENAI_AGENTS_DISABLE_TRACING=1 in `run`.
- Conversations: one in-memory `SQLiteSession` per protocol `session`, the SDK's documented
  session memory; `Runner.run(..., session=...)` prepends the stored history to each step.
- Long conversations: the SDK has no token-sized trimming of its own for Chat Completions (its
  compaction session, `OpenAIResponsesCompactionSession`, needs the Responses API's
  `responses.compact`; `SessionSettings(limit=N)` counts items, not tokens, and can split a tool
  call from its result). Its docs point to `RunConfig.call_model_input_filter` "to stay within a
  token limit", and ship `ToolOutputTrimmer` as a ready-made filter for bulky old tool outputs.
  So the filter below runs `ToolOutputTrimmer` and then drops whole oldest turns (a user message
  and everything up to the next one, so a tool call never loses its result) until an estimate of
  the request fits CTXBED_WINDOW minus the output budget. The current turn is never dropped.
- Tools: raw `FunctionTool`s with the scenario's JSON schema passed through untouched
  (`strict_json_schema=False`). The SDK's docs say a hand-made `FunctionTool` must handle its own
  errors, so a scripted failure is returned as the tool output, worded like the SDK's
  `default_tool_error_function` plus the error text.
- Anthropic: unsupported. The SDK reaches non-OpenAI APIs only through its LiteLLM or any-llm
  extensions (extra packages); we do not ship them.
"""

import asyncio
import copy
import json
import logging
import math
import os
import sys
from importlib.metadata import version

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
    RunConfig,
    Runner,
    SQLiteSession,
    set_tracing_disabled,
)
from agents.extensions import ToolOutputTrimmer  # noqa: E402
from agents.run_config import ModelInputData  # noqa: E402

HARNESS = "openai-agents"
API = os.environ.get("CTXBED_API", "openai")
MODEL = os.environ.get("CTXBED_MODEL", "wire-8k")
WINDOW = int(os.environ.get("CTXBED_WINDOW", "8000"))
MAX_OUTPUT = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))
STREAM = os.environ.get("CTXBED_STREAM", "0") == "1"


def emit(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


# ---- token estimate ----------------------------------------------------------------------------
# The SDK counts no tokens, so the budget uses a deliberately cautious estimate: ASCII at 2.5
# characters a token (ctxbed's reference estimator), every other character a token of its own.


def tokens(value) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        ascii_chars = len(value.encode("ascii", "ignore"))
        return math.ceil(ascii_chars / 2.5) + (len(value) - ascii_chars)
    if isinstance(value, dict):
        return 4 + sum(tokens(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(tokens(v) for v in value)
    return tokens(str(value))


# ---- context-window filter ---------------------------------------------------------------------

TRIMMER = ToolOutputTrimmer()  # the SDK's defaults: 2 recent turns kept whole
tools_cost = 0  # estimated size of the tool schemas, set at setup


def is_user_message(item) -> bool:
    return isinstance(item, dict) and item.get("role") == "user" and item.get("type", "message") == "message"


def fit_window(data):
    """`call_model_input_filter`: keep the request within CTXBED_WINDOW (see the module docstring)."""
    trimmed = TRIMMER(data)
    items = list(trimmed.input)
    budget = WINDOW - MAX_OUTPUT - tokens(trimmed.instructions) - tools_cost
    total = tokens(items)
    # Cut points: the start of every user turn but the first item; the last one is the current turn.
    cuts = [i for i, item in enumerate(items) if is_user_message(item) and i > 0]
    start = 0
    for cut in cuts:
        if total <= budget:
            break
        total -= tokens(items[start:cut])
        start = cut
    if start:
        logging.info("fit_window: dropped %d old items, ~%d tokens left of %d", start, total, budget)
    return ModelInputData(input=items[start:], instructions=trimmed.instructions)


# ---- tools ---------------------------------------------------------------------------------------

calls_by_tool: dict[str, int] = {}


def make_tool(spec) -> FunctionTool:
    name = spec["name"]
    results = spec.get("results") or [{"text": "", "error": False}]

    async def invoke(_ctx, _arguments: str) -> str:
        n = calls_by_tool[name] = calls_by_tool.get(name, 0) + 1
        result = results[min(n, len(results)) - 1]
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


# ---- error classification ------------------------------------------------------------------------

OVERFLOW_WORDS = ("context_length_exceeded", "context length", "prompt is too long", "context window", "input is too long")


def causes(exc):
    """The exception and everything it wraps (__cause__, __context__, exception groups), outermost first."""
    seen, queue = set(), [exc]
    while queue:
        e = queue.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        queue += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]


def classify(exc) -> str:
    for e in causes(exc):
        status = getattr(e, "status_code", None)
        text = (str(e) + " " + json.dumps(getattr(e, "body", None), default=str)).lower()
        if status in (400, 413) and any(w in text for w in OVERFLOW_WORDS):
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


# ---- protocol loop -------------------------------------------------------------------------------


async def main():
    global tools_cost
    set_tracing_disabled(True)
    loop = asyncio.get_running_loop()
    agent, unsupported, sessions = None, None, {}
    run_config = RunConfig(call_model_input_filter=fit_window, tracing_disabled=True)
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            if API != "openai":
                unsupported = (
                    f"CTXBED_API={API}: the Agents SDK speaks only OpenAI APIs natively; Anthropic "
                    "Messages needs its LiteLLM or any-llm extension, which this peer does not install"
                )
                emit({"type": "unsupported", "reason": unsupported})
                continue
            client = openai.AsyncOpenAI(base_url=os.environ["CTXBED_OPENAI_BASE_URL"], api_key=os.environ.get("CTXBED_API_KEY", "ctxbed-test"))
            tools = [make_tool(t) for t in msg.get("tools", [])]
            tools_cost = sum(8 + tokens([t.name, t.description, json.dumps(t.params_json_schema)]) for t in tools)
            agent = Agent(
                name="ctxbed",
                instructions=msg.get("system") or None,
                model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
                model_settings=ModelSettings(max_tokens=MAX_OUTPUT),
                tools=tools,
            )
            emit({"type": "ready", "harness": HARNESS, "version": version("openai-agents")})
        elif msg["type"] == "step":
            step = msg["step"]
            if agent is None:
                emit({"type": "error", "step": step, "kind": "other", "message": unsupported or "step before setup"})
                continue
            session = sessions.get(msg["session"])
            if session is None:
                session = sessions[msg["session"]] = SQLiteSession(msg["session"])  # in memory
            try:
                if STREAM:
                    result = Runner.run_streamed(agent, msg["input"], session=session, run_config=run_config)
                    async for _event in result.stream_events():
                        pass
                else:
                    result = await Runner.run(agent, msg["input"], session=session, run_config=run_config)
                output = result.final_output
                emit({"type": "reply", "step": step, "text": output if isinstance(output, str) else json.dumps(output, default=str)})
            except Exception as exc:  # noqa: BLE001 - every failure becomes a protocol error line
                logging.exception("step %s failed", step)
                emit({"type": "error", "step": step, "kind": classify(exc), "message": str(exc)[:2000]})


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
