"""ctxbed peer adapter for Hugging Face smolagents (`ToolCallingAgent`). Protocol:
docs/peer-protocol.md; what it configures and why: this directory's README.

- Model: `OpenAIServerModel(model_id=CTXBED_MODEL, api_base=CTXBED_OPENAI_BASE_URL)` (Chat
  Completions) when CTXBED_API=openai; `LiteLLMModel(model_id="anthropic/<CTXBED_MODEL>",
  api_base=CTXBED_ANTHROPIC_BASE_URL)` (Messages, through LiteLLM) when anthropic. Both get
  `max_tokens=CTXBED_MAX_OUTPUT_TOKENS` as a completion keyword, the way smolagents forwards
  extra keywords to the client. OpenAI's Responses API (CTXBED_API=responses) has no smolagents
  model: `unsupported`. Retries are smolagents' (`ApiModel`'s rate-limit retryer) over the
  clients' own.
- The agent: `ToolCallingAgent(tools, model, instructions=<system>)`, its defaults otherwise
  (`max_steps=20`, its own system prompt with the scenario's system text as custom
  instructions, `tool_choice="required"`, the `final_answer` tool). One agent per protocol
  `session`, each step `agent.run(input, reset=False)`, smolagents' documented way to continue
  a conversation. CTXBED_STREAM=1: `stream_outputs=True`.
- Extended thinking (Anthropic, CTXBED_THINKING_BUDGET): `thinking={"type": "enabled",
  "budget_tokens": N}` as a LiteLLM keyword, with `tool_choice="auto"` (Anthropic refuses thinking
  with a forced tool choice); the model is added to LiteLLM's model map as reasoning-capable
  (`litellm.register_model`), without which LiteLLM refuses the parameter for an unknown model.
- The final answer: smolagents asks every action step with the `final_answer` tool offered (and
  `tool_choice="required"`), and ends a run only through that tool; a reply without a tool call
  is a parsing error it retries. The mock scripts each step's answer as plain text and ignores
  `tool_choice`, which a provider honouring "required" never does. The model classes below hand
  such a text-only reply to smolagents as the `final_answer` call the forced choice would have
  produced (content empty, the text as `answer`, a deterministic id) and change nothing else.
  CTXBED_SMOLAGENTS_TEXT_AS_SENT=1 turns this off (smolagents then retries until the mock has no
  turn left).
- Long conversations: smolagents has no trimming, summary or token counting of its own (its
  memory docs leave editing `agent.memory` to the user's step callbacks): `"context": "none"`,
  nothing added.
- Sessions live in memory: smolagents has no documented way to store an agent's memory
  (huggingface/smolagents#1216), so a scenario that restarts the harness resumes empty.
- Tools: a `Tool` per scenario tool, its `inputs` the schema's properties (a property outside
  `required` is `nullable`, smolagents' optional input); the n-th call of a tool over the scenario
  returns results[n-1], then the last; a scripted failure raises, which smolagents reports to
  the model as its tool error.
- One process serves many scenarios: `ready` and `unsupported` say `"reset": true`; a `reset`
  line drops the agents, models, tools (with their call counts) and takes the next scenario's
  environment, read anew at the next `setup`.
"""

import base64
import io
import json
import logging
import os
import sys
import threading
from importlib.metadata import version
from pathlib import Path

# The protocol's shared environment handling (peers/shared/protocol_env.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shared"))
from protocol_env import apply_env  # noqa: E402
from error_chain import causes  # noqa: E402

# Only protocol lines may reach stdout: keep the real stream for `emit` and send everything else
# (stray prints from libraries, smolagents' rich console included) to stderr.
PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
# smolagents logs its model retries ("Retrying … in N seconds as it raised …") at INFO: keep them.
logging.getLogger("smolagents").setLevel(logging.INFO)

from rich.console import Console  # noqa: E402
from smolagents import AgentLogger, LiteLLMModel, LogLevel, OpenAIServerModel, Tool, ToolCallingAgent  # noqa: E402
from smolagents.models import (  # noqa: E402
    ChatMessage,
    ChatMessageStreamDelta,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    ChatMessageToolCallStreamDelta,
)

HARNESS = "smolagents"


def emit(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


# ---- tools ---------------------------------------------------------------------------------------

SMOL_TYPES = {"string", "boolean", "integer", "number", "array", "object", "null", "any"}


class ScriptedTool(Tool):
    """A scenario tool: its n-th call (over the whole scenario, all sessions) returns results[n-1],
    then the last. Built from the setup's JSON schema, as smolagents' own wrappers of foreign tools
    (`Tool.from_langchain`, the MCP adapter) build theirs, so the generic `forward` skips the
    signature check."""

    skip_forward_signature_validation = True
    output_type = "string"

    def __init__(self, spec, lock):
        self.name = spec["name"]
        self.description = spec.get("description") or ""
        schema = spec.get("parameters") or {}
        required = set(schema.get("required") or [])
        inputs = {}
        for key, prop in (schema.get("properties") or {}).items():
            prop = dict(prop)
            kind = prop.get("type")
            if not (kind in SMOL_TYPES or (isinstance(kind, list) and all(k in SMOL_TYPES for k in kind))):
                prop["type"] = "any"
            prop.setdefault("description", "")
            if key not in required:
                prop["nullable"] = True
            inputs[key] = prop
        self.inputs = inputs
        self.results = spec.get("results") or [{"text": "", "error": False}]
        self.calls = 0
        self.lock = lock
        super().__init__()

    def forward(self, *args, **kwargs):
        # Parallel calls run on smolagents' thread pool: count under a lock.
        with self.lock:
            self.calls += 1
            result = self.results[min(self.calls, len(self.results)) - 1]
        if result.get("error"):
            # smolagents reports a raised exception to the model as the call's error
            # ("Error executing tool '<name>' with arguments …: Exception: <text>").
            raise Exception(result["text"])
        return result["text"]


# ---- models --------------------------------------------------------------------------------------


class ForcedChoice:
    """The final answer as a provider delivers it to smolagents (see the module docstring): a
    reply without a tool call to an action step's request (one offering `final_answer`, under
    `tool_choice="required"`, or "auto" with thinking, where smolagents' prompt says the tool "is
    the only way to complete the task") comes back as the `final_answer` call, with the reply's
    text as its `answer`. Every other reply passes through unchanged."""

    def _forces(self, tools):
        """Whether the request is an action step's: it offers smolagents' `final_answer` tool."""
        if os.environ.get("CTXBED_SMOLAGENTS_TEXT_AS_SENT") == "1":  # see README: the mock's text as smolagents gets it
            return False
        return bool(tools) and any(t.name == "final_answer" for t in tools)

    def _final_answer_call(self, text):
        self.forced_calls += 1
        return ChatMessageToolCall(
            function=ChatMessageToolCallFunction(name="final_answer", arguments={"answer": text or ""}),
            id=f"call_final_{self.forced_calls}",
            type="function",
        )

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        message = super().generate(messages, stop_sequences, response_format, tools_to_call_from, **kwargs)
        if not self._forces(tools_to_call_from) or message.tool_calls:
            return message
        return ChatMessage(
            role=message.role,
            content=None,
            tool_calls=[self._final_answer_call(message.content)],
            raw=message.raw,
            token_usage=message.token_usage,
        )

    def generate_stream(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        deltas = list(super().generate_stream(messages, stop_sequences, response_format, tools_to_call_from, **kwargs))
        if not self._forces(tools_to_call_from) or any(d.tool_calls for d in deltas):
            yield from deltas
            return
        text = "".join(d.content or "" for d in deltas)
        call = self._final_answer_call(text)
        for d in deltas:
            if d.token_usage:
                yield ChatMessageStreamDelta(content="", token_usage=d.token_usage)
        yield ChatMessageStreamDelta(
            tool_calls=[
                ChatMessageToolCallStreamDelta(
                    index=0,
                    id=call.id,
                    type="function",
                    function=ChatMessageToolCallFunction(name="final_answer", arguments=json.dumps(call.function.arguments)),
                )
            ]
        )


class OpenAIChat(ForcedChoice, OpenAIServerModel):
    forced_calls = 0


class Anthropic(ForcedChoice, LiteLLMModel):
    forced_calls = 0


def make_model():
    """The model for CTXBED_API, from the environment as it is now, or None when smolagents has
    none for it."""
    api = os.environ.get("CTXBED_API", "openai")
    name = os.environ.get("CTXBED_MODEL", "wire-8k")
    api_key = os.environ.get("CTXBED_API_KEY", "ctxbed-test")
    extra = {"max_tokens": int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))}
    budget = os.environ.get("CTXBED_THINKING_BUDGET", "")
    if api == "openai":
        return OpenAIChat(model_id=name, api_base=os.environ["CTXBED_OPENAI_BASE_URL"], api_key=api_key, **extra)
    if api == "anthropic":
        import litellm

        if budget.isdigit():
            # Extended thinking, as LiteLLM takes it (smolagents forwards extra keywords to
            # `litellm.completion`). Anthropic refuses thinking with a forced tool choice (`any`,
            # which smolagents' "required" becomes), so the agent's tool choice is set to "auto",
            # the one smolagents lets a model's keywords override.
            extra["thinking"] = {"type": "enabled", "budget_tokens": int(budget)}
            extra["tool_choice"] = "auto"
        # LiteLLM passes `thinking` only to a model its model map says can reason, and the mock's
        # model names are not in that map: add the model the way LiteLLM adds a custom one (as
        # the litellm peer does), saying either way so that nothing of an earlier scenario lingers.
        window = int(os.environ.get("CTXBED_WINDOW", "8000"))
        litellm.register_model(
            {
                f"anthropic/{name}": {
                    "max_input_tokens": window,
                    "max_tokens": window,
                    "litellm_provider": "anthropic",
                    "mode": "chat",
                    "supports_reasoning": "thinking" in extra,
                }
            }
        )
        return Anthropic(
            model_id=f"anthropic/{name}", api_base=os.environ["CTXBED_ANTHROPIC_BASE_URL"], api_key=api_key, **extra
        )
    return None


# ---- errors ----------------------------------------------------------------------------------------

OVERFLOW_WORDS = (
    "context_length_exceeded",
    "context length",
    "prompt is too long",
    "context window",
    "contextwindowexceeded",  # LiteLLM's class name, as a LiteLLM gateway words an overflow
    "input is too long",
)


def classify(exc):
    for e in causes(exc):
        name = type(e).__name__
        status = getattr(e, "status_code", None)
        text = (str(e) + " " + json.dumps(getattr(e, "body", None), default=str)).lower()
        if name == "ContextWindowExceededError" or (status in (400, 413) and any(w in text for w in OVERFLOW_WORDS)):
            return "context_overflow"
        if name == "RateLimitError" or status == 429:
            return "rate_limited"
        if "Timeout" in name:
            return "timeout"
        if isinstance(status, int):
            return "provider_error"
        if isinstance(e, json.JSONDecodeError) or name in ("ValidationError", "APIResponseValidationError"):
            return "malformed_reply"
        # A 200 whose body is not JSON (an HTML error page) reaches smolagents as a string, which
        # it then reads as a completion: "'str' object has no attribute 'choices'".
        if isinstance(e, AttributeError) and str(e).startswith("'str' object"):
            return "malformed_reply"
    return "other"


def describe(exc):
    """The error's class and message: the provider's error (the first in the chain with an HTTP
    status) when there is one, which smolagents wraps in `AgentGenerationError("Error while
    generating output: …")`, else the exception itself."""
    shown = next((e for e in causes(exc) if isinstance(getattr(e, "status_code", None), int)), exc)
    return f"{type(shown).__name__}: {shown}"


# ---- one scenario ----------------------------------------------------------------------------------


class Scenario:
    def __init__(self, setup):
        self.setup = setup
        self.lock = threading.Lock()
        # One set of tools for the scenario: their call counts run over all sessions.
        self.tools = [ScriptedTool(spec, self.lock) for spec in setup.get("tools", [])]
        self.stream = os.environ.get("CTXBED_STREAM", "0") == "1"
        self.agents = {}

    def agent(self, session):
        if session not in self.agents:
            model = make_model()
            self.agents[session] = ToolCallingAgent(
                tools=list(self.tools),
                model=model,
                instructions=self.setup.get("system") or None,
                stream_outputs=self.stream,
                logger=AgentLogger(level=LogLevel.INFO, console=Console(stderr=True, highlight=False, width=120)),
            )
        return self.agents[session]

    def step(self, msg):
        agent = self.agent(msg["session"])
        images = None
        if msg.get("images"):
            from PIL import Image

            images = [Image.open(io.BytesIO(base64.b64decode(i["data"]))) for i in msg["images"]]
        output = agent.run(msg["input"], reset=False, images=images)
        return output if isinstance(output, str) else json.dumps(output, default=str)


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
                reason = f"CTXBED_API={api}: smolagents has no model for OpenAI's Responses API (OpenAIServerModel speaks Chat Completions)"
                emit({"type": "unsupported", "reason": reason, "reset": True})
                continue
            scenario = Scenario(msg)
            emit({"type": "ready", "harness": HARNESS, "version": version("smolagents"), "context": "none", "reset": True})
        elif msg["type"] == "reset":
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
                emit({"type": "error", "step": msg["step"], "kind": classify(exc), "message": describe(exc)[:2000]})


if __name__ == "__main__":
    main()
    sys.exit(0)
