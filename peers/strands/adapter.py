"""ctxbed peer adapter for Strands Agents (`strands-agents`). Protocol: docs/peer-protocol.md.

What it configures, and why (README.md has the docs this follows):
- Model: `OpenAIModel` (Chat Completions) when CTXBED_API=openai, `OpenAIResponsesModel` (OpenAI's
  Responses API, `store` left at its default, off) when CTXBED_API=responses, `AnthropicModel`
  (Messages) when CTXBED_API=anthropic, each with `client_args={"base_url": ..., "api_key": ...}`
  as the model-provider docs show for a custom endpoint. Output budget: `params={"max_tokens": N}`
  (Chat Completions, as the docs' example), `params={"max_output_tokens": N}` (Responses),
  `max_tokens=N` (Anthropic, a required setting). `context_window_limit=CTXBED_WINDOW`, the docs'
  way of giving the window of a model missing from Strands' lookup table. `CTXBED_STREAM` chooses
  `OpenAIModel`'s `stream` setting; the Anthropic and Responses providers always stream. With
  CTXBED_THINKING_BUDGET set, `params={"thinking": {"type": "enabled", "budget_tokens": N}}`, the
  pass-through of Anthropic's own parameter. Retries are Strands' and the clients' defaults.
- Long conversations: `SummarizingConversationManager(proactive_compression=True)`, the docs'
  summarising manager with their proactive-compression example (summarise the oldest messages once
  the projected input reaches 70 % of `context_window_limit`, and on an overflow error); its other
  settings are the defaults (summary_ratio 0.3, 10 recent messages kept, the agent's own model
  writes the summary).
- Sessions: one `Agent` per protocol `session`; its `messages` are the conversation, so the steps
  of a session continue it and a new session starts empty. When CTXBED_STATE_DIR is set (a
  scenario that restarts the harness), each session's `Agent` also gets the docs' session
  persistence, `FileSessionManager(session_id=<session name in hex>, storage_dir=CTXBED_STATE_DIR)`:
  Strands writes each message as it is added and the agent's state (the conversation manager's
  summary and count of summarised messages included) as it changes and after each invocation, so
  a new process's `Agent` for that session restores the conversation as the manager left it.
- Images a step attaches: the prompt becomes a list of content blocks, `{"text": ...}` and then
  each image as `{"image": {"format": ..., "source": {"bytes": <decoded bytes>}}}`, the docs'
  image input; a step without images passes its text as a string, as before.
- Tools: one `PythonAgentTool` per scripted tool, its spec carrying the scenario's JSON schema; it
  returns a `ToolResult` with status "success", or "error" for a scripted failure (Strands' own
  failed-tool result: `is_error` on Anthropic).
- No output but protocol lines: `callback_handler=None` (the default handler prints to stdout),
  and `sys.stdout` is pointed at standard error. `run` turns OpenTelemetry off; Strands sets up no
  exporter unless asked (`StrandsTelemetry`), which this adapter never does.
- One process serves many scenarios: `ready` and `unsupported` say `"reset": true`; a `reset` line
  drops every session's `Agent` (with its model, client, conversation manager and tools, and so
  their call counts) and takes the next scenario's environment, which the next `setup` reads anew
  (CTXBED_STATE_DIR, or its absence, included).
"""

import asyncio
import base64
import inspect
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

from strands import Agent  # noqa: E402
from strands.agent.conversation_manager import SummarizingConversationManager  # noqa: E402
from strands.session.file_session_manager import FileSessionManager  # noqa: E402
from strands.tools.tools import PythonAgentTool  # noqa: E402
from strands.types import exceptions as strands_errors  # noqa: E402

HARNESS = "strands"
APIS = ("openai", "responses", "anthropic")


def emit(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


# ---- model ---------------------------------------------------------------------------------------


def supported(model_class, config_name, settings):
    """`settings` without the keys the installed release's model config (`model_class.<config_name>`,
    a TypedDict) does not declare. Older releases, which the bug zoo runs through CTXBED_PEER_ENV,
    lack `context_window_limit` (and `stream` on `OpenAIModel`, which then always streams): they
    cannot be told the window, as their users could not."""
    keys = getattr(getattr(model_class, config_name, None), "__annotations__", None)
    if keys is None:
        return settings
    return {k: v for k, v in settings.items() if k in keys}


# Configurations other than the row's own, for the bug zoo (CTXBED_PEER_VARIANT, see the README);
# never chosen by a scenario.
VARIANTS = ("", "litellm")
VARIANT = os.environ.get("CTXBED_PEER_VARIANT", "")


def litellm_model(model, api_key, max_output):
    """The `litellm` variant: Strands' `LiteLLMModel` on LiteLLM's OpenAI route, pointed at the mock
    by `api_base` (Strands passes `client_args` to LiteLLM's completion call)."""
    from strands.models.litellm import LiteLLMModel

    return LiteLLMModel(
        client_args={"api_base": os.environ["CTXBED_OPENAI_BASE_URL"], "api_key": api_key},
        model_id=f"openai/{model}",
        params={"max_tokens": max_output},
    )


def make_model():
    """A new model for CTXBED_API, from the environment as it is now, or None when Strands has no
    provider for it (or the variant speaks only OpenAI's Chat Completions)."""
    api = os.environ.get("CTXBED_API", "openai")
    model = os.environ.get("CTXBED_MODEL", "wire-8k")
    api_key = os.environ.get("CTXBED_API_KEY", "ctxbed-test")
    window = int(os.environ.get("CTXBED_WINDOW", "8000"))
    max_output = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))
    if VARIANT == "litellm":
        return litellm_model(model, api_key, max_output) if api == "openai" else None
    if api == "openai":
        from strands.models.openai import OpenAIModel

        return OpenAIModel(
            client_args={"base_url": os.environ["CTXBED_OPENAI_BASE_URL"], "api_key": api_key},
            **supported(OpenAIModel, "OpenAIConfig", dict(
                model_id=model,
                params={"max_tokens": max_output},
                stream=os.environ.get("CTXBED_STREAM", "0") == "1",
                context_window_limit=window,
            )),
        )
    if api == "responses":
        try:
            from strands.models.openai_responses import OpenAIResponsesModel
        except ImportError:  # a release before the Responses provider (1.34): unsupported
            return None

        return OpenAIResponsesModel(
            client_args={"base_url": os.environ["CTXBED_OPENAI_BASE_URL"], "api_key": api_key},
            **supported(OpenAIResponsesModel, "OpenAIResponsesConfig", dict(
                model_id=model,
                params={"max_output_tokens": max_output},
                context_window_limit=window,
            )),
        )
    if api == "anthropic":
        from strands.models.anthropic import AnthropicModel

        params = {}
        thinking_budget = os.environ.get("CTXBED_THINKING_BUDGET", "")
        if thinking_budget.isdigit():
            # Extended thinking: Anthropic's own parameter, passed through `params` (no temperature set).
            params["thinking"] = {"type": "enabled", "budget_tokens": int(thinking_budget)}
        return AnthropicModel(
            client_args={"base_url": os.environ["CTXBED_ANTHROPIC_BASE_URL"], "api_key": api_key},
            **supported(AnthropicModel, "AnthropicConfig", dict(
                model_id=model,
                max_tokens=max_output,
                params=params,
                context_window_limit=window,
            )),
        )
    return None


# ---- tools ---------------------------------------------------------------------------------------


# A step line's `crash`: the process dies while the step's first tool runs, as a runtime killed
# mid-tool; what the session manager had written by then is all the next process finds.
STEP_CRASH = {"asked": False}


def make_tool(spec, calls_by_tool) -> PythonAgentTool:
    """A tool that answers its n-th call (over the whole scenario, all sessions: `calls_by_tool`
    is the scenario's, shared by every session's Agent) with results[n-1]; in a step that asks
    for a crash, it ends the process instead."""
    name = spec["name"]
    results = spec.get("results") or [{"text": "", "error": False}]
    tool_spec = {
        "name": name,
        "description": spec.get("description") or name,
        "inputSchema": {"json": spec.get("parameters") or {"type": "object", "properties": {}}},
    }

    def invoke(tool_use, **_invocation_state):
        if STEP_CRASH["asked"]:
            logging.warning("step asks for a crash: ending the process in tool %s", name)
            os._exit(3)
        n = calls_by_tool[name] = calls_by_tool.get(name, 0) + 1
        result = results[min(n, len(results)) - 1]
        return {
            "toolUseId": tool_use["toolUseId"],
            "status": "error" if result.get("error") else "success",
            "content": [{"text": result.get("text", "")}],
        }

    return PythonAgentTool(name, tool_spec, invoke)


def conversation_manager():
    """The docs' summarising manager with proactive compression; a release before
    `proactive_compression` (older than the adapter's pin, run by the bug zoo) summarises on an
    overflow only, its one mode."""
    if "proactive_compression" in inspect.signature(SummarizingConversationManager.__init__).parameters:
        return SummarizingConversationManager(proactive_compression=True)
    return SummarizingConversationManager()


def make_agent(system, tool_specs, calls_by_tool, session, state_dir):
    """The session's `Agent`; with a state directory, kept there by Strands' `FileSessionManager`
    (which restores what an earlier process left of the session)."""
    session_manager = None
    if state_dir is not None:
        session_manager = FileSessionManager(session_id=session_file_name(session), storage_dir=state_dir)
    return Agent(
        model=make_model(),
        system_prompt=system,
        tools=[make_tool(t, calls_by_tool) for t in tool_specs],
        conversation_manager=conversation_manager(),
        session_manager=session_manager,
        callback_handler=None,
    )


# ---- the step's prompt ----------------------------------------------------------------------------

# Strands' image formats (`ImageContent.format`) by the media type the protocol gives.
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}


def prompt(step):
    """The agent's prompt: the step's text as a string, or, when the step attaches images, a list
    of content blocks, the text and then each image, in order, as the docs give image input
    (`{"image": {"format": "png", "source": {"bytes": <the file's bytes>}}}`)."""
    images = step.get("images")
    if not images:
        return step["input"]
    blocks = [{"text": step["input"]}]
    for image in images:
        if image["media_type"] not in IMAGE_FORMATS:
            raise ValueError(f"image media type {image['media_type']!r}: Strands takes only {', '.join(IMAGE_FORMATS)}")
        blocks.append({"image": {"format": IMAGE_FORMATS[image["media_type"]], "source": {"bytes": base64.b64decode(image["data"])}}})
    return blocks


# ---- error classification ------------------------------------------------------------------------


OVERFLOW_WORDS = ("context_length_exceeded", "prompt is too long", "maximum context length", "context window")


def classify(exc) -> str:
    chain = list(causes(exc))
    for e in chain:
        status = getattr(e, "status_code", None)
        text = (str(e) + " " + json.dumps(getattr(e, "body", None), default=str)).lower()
        if (
            isinstance(e, strands_errors.ContextWindowOverflowException)
            or (status in (400, 413) and any(w in text for w in OVERFLOW_WORDS))
            or getattr(e, "code", None) == "context_length_exceeded"
        ):
            return "context_overflow"
        if isinstance(e, strands_errors.ModelThrottledException) or status == 429:
            return "rate_limited"
        if isinstance(e, (TimeoutError, asyncio.TimeoutError)) or "Timeout" in type(e).__name__:
            return "timeout"
        if isinstance(status, int):
            return "provider_error"
    for e in chain:
        if isinstance(e, (json.JSONDecodeError, strands_errors.MaxTokensReachedException)) or type(e).__name__ in (
            "ValidationError",
            "APIResponseValidationError",
        ):
            return "malformed_reply"
    return "other"


def reply_text(result) -> str:
    # AgentResult's str() joins the final message's text blocks, each followed by a newline.
    text = str(result)
    return text[:-1] if text.endswith("\n") else text


# ---- protocol loop -------------------------------------------------------------------------------


async def main():
    loop = asyncio.get_running_loop()
    # One scenario's state; a `reset` line drops it all.
    setup, unsupported, agents, calls_by_tool, state_dir = None, None, {}, {}, None
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            api = os.environ.get("CTXBED_API", "openai")
            if api not in APIS or make_model() is None:
                if api not in APIS:
                    unsupported = f"CTXBED_API={api}: Strands' providers here speak openai, responses and anthropic"
                elif VARIANT == "litellm":
                    unsupported = f"CTXBED_API={api}: the litellm variant speaks openai only"
                else:
                    unsupported = f"CTXBED_API={api}: this release of Strands has no provider for it"
                emit({"type": "unsupported", "reason": unsupported, "reset": True})
                continue
            setup = msg
            state_dir = os.environ.get("CTXBED_STATE_DIR") or None
            emit({"type": "ready", "harness": HARNESS, "version": version("strands-agents"), "context": "own", "reset": True, "crashes": True})
        elif msg["type"] == "reset":
            # Nothing of the scenario is kept; no line answers a reset.
            setup, unsupported, agents, calls_by_tool, state_dir = None, None, {}, {}, None
            apply_env(msg.get("env", {}))
        elif msg["type"] == "step":
            step = msg["step"]
            if setup is None:
                emit({"type": "error", "step": step, "kind": "other", "message": unsupported or "step before setup"})
                continue
            try:
                session = msg["session"]
                if session not in agents:
                    agents[session] = make_agent(
                        setup.get("system") or None, setup.get("tools", []), calls_by_tool, session, state_dir
                    )
                STEP_CRASH["asked"] = bool(msg.get("crash"))
                result = await agents[session].invoke_async(prompt(msg))
                emit({"type": "reply", "step": step, "text": reply_text(result)})
            except Exception as exc:  # noqa: BLE001 - every failure becomes a protocol error line
                logging.exception("step %s failed", step)
                emit({"type": "error", "step": step, "kind": classify(exc), "message": (str(exc) or type(exc).__name__)[:2000]})


if __name__ == "__main__":
    if VARIANT not in VARIANTS:
        sys.exit(f"strands adapter: no variant {VARIANT!r} (known: {', '.join(v for v in VARIANTS if v)})")
    asyncio.run(main())
    sys.exit(0)
