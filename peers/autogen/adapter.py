"""ctxbed peer adapter for AutoGen AgentChat (`autogen-agentchat`): an `AssistantAgent` per
session. Protocol: docs/peer-protocol.md; what it configures and why: this directory's README.

- Model: `OpenAIChatCompletionClient(model, base_url=CTXBED_OPENAI_BASE_URL, api_key,
  max_tokens=N, model_info=...)` (Chat Completions) when CTXBED_API=openai;
  `AnthropicChatCompletionClient(model, base_url=CTXBED_ANTHROPIC_BASE_URL, api_key, max_tokens=N,
  model_info=...)` (Messages) when anthropic, with `thinking={"type": "enabled", "budget_tokens":
  N}` when CTXBED_THINKING_BUDGET is set. `model_info` is what AutoGen requires for a model it
  does not know (vision, function calling). AutoGen has no Responses-API client: `unsupported`.
- Long conversations: `model_context=TokenLimitedChatCompletionContext(model_client,
  token_limit=CTXBED_WINDOW - CTXBED_MAX_OUTPUT_TOKENS, tool_schema=<the tools>)`, the
  token-limited context the AssistantAgent docs give for a model's token limit ("Limit context
  size sent to the model"): messages are dropped from the middle until the count fits.
- Tool loop: `max_tool_iterations=20, reflect_on_tool_use=True`, as the AssistantAgent docs'
  multi-step example (the default, 1, returns the first tool result itself as the answer).
- Sessions: one `AssistantAgent` per protocol `session` (an AgentChat agent is stateful and is
  given only the new message). With CTXBED_STATE_DIR, each agent's `save_state()` is written
  there as JSON after each step and `load_state()` read back by a new process, AutoGen's
  documented way of persisting an agent ("Managing State").
- Streaming (CTXBED_STREAM=1): `model_client_stream=True`.
- Tools: a `BaseTool` per scripted tool whose schema is the scenario's; a scripted failure
  raises, which AutoGen hands to the model as an error result.
- One process serves many scenarios: `ready` and `unsupported` say `"reset": true`.
"""

import asyncio
import base64
import io
import json
import logging
import os
import sys
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shared"))
from protocol_env import apply_env, session_file_name  # noqa: E402
from error_chain import causes  # noqa: E402

PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.messages import MultiModalMessage, TextMessage  # noqa: E402
from autogen_core import CancellationToken  # noqa: E402
from autogen_core import Image as AGImage  # noqa: E402
from autogen_core.model_context import TokenLimitedChatCompletionContext  # noqa: E402
from autogen_core.models import ModelInfo  # noqa: E402
from autogen_core.tools import BaseTool  # noqa: E402
from pydantic import BaseModel, ConfigDict  # noqa: E402

HARNESS = "autogen"
APIS = ("openai", "anthropic")
MAX_TOOL_ITERATIONS = 20


def emit(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


def model_info():
    return ModelInfo(vision=True, function_calling=True, json_output=False, family="unknown", structured_output=False)


def make_client():
    api = os.environ.get("CTXBED_API", "openai")
    model = os.environ.get("CTXBED_MODEL", "wire-8k")
    api_key = os.environ.get("CTXBED_API_KEY", "ctxbed-test")
    max_output = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))
    if api == "openai":
        from autogen_ext.models.openai import OpenAIChatCompletionClient

        return OpenAIChatCompletionClient(
            model=model,
            base_url=os.environ["CTXBED_OPENAI_BASE_URL"],
            api_key=api_key,
            max_tokens=max_output,
            model_info=model_info(),
        )
    from autogen_ext.models.anthropic import AnthropicChatCompletionClient

    extra = {}
    budget = os.environ.get("CTXBED_THINKING_BUDGET", "")
    if budget.isdigit():
        extra["thinking"] = {"type": "enabled", "budget_tokens": int(budget)}
    return AnthropicChatCompletionClient(
        model=model,
        base_url=os.environ["CTXBED_ANTHROPIC_BASE_URL"],
        api_key=api_key,
        max_tokens=max_output,
        model_info=model_info(),
        **extra,
    )


class AnyArgs(BaseModel):
    model_config = ConfigDict(extra="allow")


class ScriptedTool(BaseTool[AnyArgs, str]):
    """A tool whose schema is the scenario's and whose n-th call (over the scenario, all
    sessions) returns results[n-1], then the last; a scripted failure raises with its text."""

    def __init__(self, spec, calls_by_tool):
        super().__init__(AnyArgs, str, spec["name"], spec.get("description") or spec["name"])
        self._spec = spec
        self._calls = calls_by_tool

    @property
    def schema(self):
        return {
            "name": self._spec["name"],
            "description": self._spec.get("description") or self._spec["name"],
            "parameters": self._spec.get("parameters") or {"type": "object", "properties": {}},
        }

    async def run(self, args, cancellation_token):
        name = self._spec["name"]
        results = self._spec.get("results") or [{"text": "", "error": False}]
        n = self._calls[name] = self._calls.get(name, 0) + 1
        result = results[min(n, len(results)) - 1]
        if result.get("error"):
            raise RuntimeError(result.get("text", ""))
        return result.get("text", "")


def task(step):
    images = step.get("images")
    if not images:
        return TextMessage(content=step["input"], source="user")
    from PIL import Image as PILImage

    content = [step["input"]]
    for image in images:
        content.append(AGImage(PILImage.open(io.BytesIO(base64.b64decode(image["data"])))))
    return MultiModalMessage(content=content, source="user")


# ---- error classification ------------------------------------------------------------------------


OVERFLOW_WORDS = ("context_length_exceeded", "prompt is too long", "maximum context length", "context window", "input tokens exceed")


def classify(exc):
    chain = list(causes(exc))
    for e in chain:
        status = getattr(e, "status_code", None)
        text = (str(e) + " " + json.dumps(getattr(e, "body", None), default=str)).lower()
        if status in (400, 413) and any(w in text for w in OVERFLOW_WORDS):
            return "context_overflow"
        if status == 429:
            return "rate_limited"
        if "Timeout" in type(e).__name__:
            return "timeout"
        if isinstance(status, int):
            return "provider_error"
    for e in chain:
        if isinstance(e, json.JSONDecodeError) or type(e).__name__ in ("APIResponseValidationError", "ValidationError"):
            return "malformed_reply"
    return "other"


# ---- scenario --------------------------------------------------------------------------------------


class Scenario:
    def __init__(self, setup):
        self.setup = setup
        self.state_dir = os.environ.get("CTXBED_STATE_DIR") or None
        self.window = int(os.environ.get("CTXBED_WINDOW", "8000"))
        self.max_output = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))
        self.stream = os.environ.get("CTXBED_STREAM", "0") == "1"
        self.calls_by_tool = {}
        self.agents = {}

    def state_file(self, session):
        return Path(self.state_dir) / f"{session_file_name(session)}.json"

    async def agent(self, session):
        if session in self.agents:
            return self.agents[session]
        client = make_client()
        tools = [ScriptedTool(t, self.calls_by_tool) for t in self.setup.get("tools", [])]
        agent = AssistantAgent(
            name="assistant",
            model_client=client,
            tools=tools or None,
            system_message=self.setup.get("system") or None,
            model_context=TokenLimitedChatCompletionContext(
                client, token_limit=self.window - self.max_output, tool_schema=[t.schema for t in tools]
            ),
            model_client_stream=self.stream,
            reflect_on_tool_use=True,
            max_tool_iterations=MAX_TOOL_ITERATIONS,
        )
        if self.state_dir and self.state_file(session).exists():
            await agent.load_state(json.loads(self.state_file(session).read_text()))
        self.agents[session] = agent
        return agent

    async def step(self, msg):
        agent = await self.agent(msg["session"])
        try:
            result = await agent.run(task=task(msg), cancellation_token=CancellationToken())
        finally:
            if self.state_dir:
                self.state_file(msg["session"]).write_text(json.dumps(await agent.save_state(), default=str))
        last = result.messages[-1]
        content = getattr(last, "content", "")
        return content if isinstance(content, str) else (last.to_text() if hasattr(last, "to_text") else str(content))


async def main():
    loop = asyncio.get_running_loop()
    scenario, unsupported = None, None
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            api = os.environ.get("CTXBED_API", "openai")
            if api not in APIS:
                scenario = None
                unsupported = f"CTXBED_API={api}: AutoGen has no client for OpenAI's Responses API"
                emit({"type": "unsupported", "reason": unsupported, "reset": True})
                continue
            scenario = Scenario(msg)
            emit({"type": "ready", "harness": HARNESS, "version": version("autogen-agentchat"), "context": "own", "reset": True})
        elif msg["type"] == "reset":
            scenario, unsupported = None, None
            apply_env(msg.get("env", {}))
        elif msg["type"] == "step":
            step = msg["step"]
            if scenario is None:
                emit({"type": "error", "step": step, "kind": "other", "message": unsupported or "step before setup"})
                continue
            try:
                emit({"type": "reply", "step": step, "text": await scenario.step(msg)})
            except Exception as exc:  # noqa: BLE001
                logging.exception("step %s failed", step)
                emit({"type": "error", "step": step, "kind": classify(exc), "message": (str(exc) or type(exc).__name__)[:2000]})


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
