"""ctxbed peer adapter for LlamaIndex agents (`llama-index-core`): a `FunctionAgent` with a
`Memory` per session. Protocol: docs/peer-protocol.md; what it configures and why: this
directory's README.

- Model: `OpenAILike(model, api_base=CTXBED_OPENAI_BASE_URL, api_key, is_chat_model=True,
  is_function_calling_model=True, context_window=CTXBED_WINDOW, max_tokens=N)` (Chat
  Completions; LlamaIndex's class for an OpenAI-compatible server) when CTXBED_API=openai;
  `Anthropic(model, base_url=CTXBED_ANTHROPIC_BASE_URL, api_key, max_tokens=N)` (Messages) when
  anthropic, with `thinking_dict={"type": "enabled", "budget_tokens": N}` when
  CTXBED_THINKING_BUDGET is set. A scenario pinning the Responses API: `unsupported` (OpenAILike
  speaks Chat Completions; LlamaIndex's `OpenAIResponses` takes only OpenAI's own model names).
- Long conversations: `Memory.from_defaults(session_id=<session>, token_limit=CTXBED_WINDOW)`,
  the memory the agent docs pass to `agent.run(..., memory=memory)`, its other settings the
  defaults (chat history kept to 70 % of the limit, the oldest messages flushed out of it past
  that, no memory blocks).
- Sessions: one `Memory` per protocol `session`; one `FunctionAgent` per scenario. With
  CTXBED_STATE_DIR, every Memory keeps its messages in a SQLite file there
  (`async_database_uri`), so a new process continues the sessions.
- Streaming: `FunctionAgent(streaming=CTXBED_STREAM == "1")` (the agent streams by default).
- Tools: one tool per scripted tool, its parameters the scenario's JSON schema; a scripted
  failure raises, which the agent hands to the model as the tool's error output.
- One process serves many scenarios: `ready` and `unsupported` say `"reset": true`.
"""

import asyncio
import base64
import json
import logging
import os
import sys
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shared"))
from protocol_env import apply_env  # noqa: E402
from error_chain import causes  # noqa: E402

PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, MessageRole, TextBlock  # noqa: E402
from llama_index.core.memory import Memory  # noqa: E402
from llama_index.core.tools import ToolMetadata, ToolOutput  # noqa: E402
from llama_index.core.tools.types import AsyncBaseTool  # noqa: E402

HARNESS = "llamaindex"
APIS = ("openai",)


def emit(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


def make_llm(window):
    api = os.environ.get("CTXBED_API", "openai")
    model = os.environ.get("CTXBED_MODEL", "wire-8k")
    api_key = os.environ.get("CTXBED_API_KEY", "ctxbed-test")
    max_output = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))
    if api == "openai":
        from llama_index.llms.openai_like import OpenAILike

        return OpenAILike(
            model=model,
            api_base=os.environ["CTXBED_OPENAI_BASE_URL"],
            api_key=api_key,
            is_chat_model=True,
            is_function_calling_model=True,
            context_window=window,
            max_tokens=max_output,
        )
    raise ValueError(f"CTXBED_API={api}")


class SchemaMetadata(ToolMetadata):
    """A tool's metadata whose parameters are a given JSON schema (the scenario's) rather than
    one generated from a pydantic model."""

    def get_parameters_dict(self):
        return self._parameters


class ScriptedTool(AsyncBaseTool):
    def __init__(self, spec, calls_by_tool):
        self._spec = spec
        self._calls = calls_by_tool
        meta = SchemaMetadata(description=spec.get("description") or spec["name"], name=spec["name"])
        meta._parameters = spec.get("parameters") or {"type": "object", "properties": {}}
        self._metadata = meta

    @property
    def metadata(self):
        return self._metadata

    def call(self, *args, **kwargs):
        name = self._spec["name"]
        results = self._spec.get("results") or [{"text": "", "error": False}]
        n = self._calls[name] = self._calls.get(name, 0) + 1
        result = results[min(n, len(results)) - 1]
        if result.get("error"):
            raise RuntimeError(result.get("text", ""))
        text = result.get("text", "")
        return ToolOutput(content=text, tool_name=name, raw_input={"args": args, "kwargs": kwargs}, raw_output=text)

    async def acall(self, *args, **kwargs):
        return self.call(*args, **kwargs)


def user_message(step):
    images = step.get("images")
    if not images:
        return step["input"]
    blocks = [TextBlock(text=step["input"])]
    for image in images:
        blocks.append(ImageBlock(image=base64.b64decode(image["data"]), image_mimetype=image["media_type"]))
    return ChatMessage(role=MessageRole.USER, blocks=blocks)


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


class Scenario:
    def __init__(self, setup):
        self.window = int(os.environ.get("CTXBED_WINDOW", "8000"))
        state_dir = os.environ.get("CTXBED_STATE_DIR") or None
        self.db_uri = f"sqlite+aiosqlite:///{Path(state_dir) / 'memory.db'}" if state_dir else None
        self.calls_by_tool = {}
        tools = [ScriptedTool(t, self.calls_by_tool) for t in setup.get("tools", [])]
        self.agent = FunctionAgent(
            tools=tools,
            llm=make_llm(self.window),
            system_prompt=setup.get("system") or None,
            streaming=os.environ.get("CTXBED_STREAM", "0") == "1",
        )
        self.memories = {}

    def memory(self, session):
        if session not in self.memories:
            kwargs = {"async_database_uri": self.db_uri} if self.db_uri else {}
            self.memories[session] = Memory.from_defaults(session_id=session, token_limit=self.window, **kwargs)
        return self.memories[session]

    async def step(self, msg):
        response = await self.agent.run(user_msg=user_message(msg), memory=self.memory(msg["session"]))
        return str(response.response.content or "")


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
                unsupported = (
                    f"CTXBED_API={api}: LlamaIndex's OpenAIResponses and Anthropic LLMs take only their providers' own model names "
                    "(the metadata lookup raises 'Unknown model' for any other); OpenAILike speaks Chat Completions"
                )
                emit({"type": "unsupported", "reason": unsupported, "reset": True})
                continue
            scenario = Scenario(msg)
            emit({"type": "ready", "harness": HARNESS, "version": version("llama-index-core"), "context": "own", "reset": True})
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
