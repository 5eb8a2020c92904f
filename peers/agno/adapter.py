"""ctxbed peer adapter for Agno (`agno`). Protocol: docs/peer-protocol.md; what it configures and
why: this directory's README.

- Model: `OpenAILike(id, base_url=CTXBED_OPENAI_BASE_URL, api_key, max_tokens=N)` (Chat
  Completions; Agno's class for any OpenAI-compatible server) when CTXBED_API=openai;
  `OpenAIResponses(id, base_url, api_key, max_output_tokens=N)` when the scenario pins the
  Responses API; `Claude(id, api_key, max_tokens=N, client_params={"base_url": ...})` (Messages)
  when anthropic, with `thinking={"type": "enabled", "budget_tokens": N}` when
  CTXBED_THINKING_BUDGET is set. Retries are Agno's and the clients' defaults.
- Long conversations: `add_history_to_context=True` and `compaction=Compaction(
  compact_at_tokens=80 % of CTXBED_WINDOW, on_context_overflow=True)`, Agno's compaction (older
  history folded into a summary, the recent runs kept verbatim, the defaults otherwise): the
  threshold is the one size Agno takes (it has no window setting), and `on_context_overflow` also
  folds and retries when the provider refuses a request as too long. Compaction needs a database
  that stores its records: `SqliteDb`.
- Sessions: one `Agent` per scenario over a `SqliteDb`; each step is `agent.run(input,
  session_id=<session>, user_id=<user>)`, so steps of a session continue it from the database and
  a new session starts empty. With CTXBED_STATE_DIR the database file lives there, so a new
  process continues the sessions; otherwise in a temporary directory dropped at `reset`.
- Streaming (CTXBED_STREAM=1): `agent.run(..., stream=True)`, the events drained and the run's
  output read back from the agent.
- Tools: one `Function` per scripted tool with the scenario's JSON schema as its `parameters`; a
  scripted failure raises, which Agno reports to the model as the tool's error.
- One process serves many scenarios: `ready` and `unsupported` say `"reset": true`.
"""

import base64
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

# The protocol's shared environment handling (peers/shared/protocol_env.py).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shared"))
from protocol_env import apply_env  # noqa: E402

# Only protocol lines may reach stdout.
PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

from agno.agent import Agent  # noqa: E402
from agno.compaction import Compaction  # noqa: E402
from agno.db.sqlite import SqliteDb  # noqa: E402
from agno.media import Image  # noqa: E402
from agno.run.base import RunStatus  # noqa: E402
from agno.tools.function import Function  # noqa: E402

HARNESS = "agno"
APIS = ("openai", "responses", "anthropic")
COMPACT_AT = 0.8  # of the window


def emit(obj):
    PROTOCOL_OUT.write(json.dumps(obj) + "\n")
    PROTOCOL_OUT.flush()


def make_model():
    api = os.environ.get("CTXBED_API", "openai")
    model = os.environ.get("CTXBED_MODEL", "wire-8k")
    api_key = os.environ.get("CTXBED_API_KEY", "ctxbed-test")
    max_output = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))
    if api == "openai":
        from agno.models.openai.like import OpenAILike

        return OpenAILike(id=model, base_url=os.environ["CTXBED_OPENAI_BASE_URL"], api_key=api_key, max_tokens=max_output)
    if api == "responses":
        from agno.models.openai.responses import OpenAIResponses

        return OpenAIResponses(
            id=model, base_url=os.environ["CTXBED_OPENAI_BASE_URL"], api_key=api_key, max_output_tokens=max_output
        )
    from agno.models.anthropic import Claude

    budget = os.environ.get("CTXBED_THINKING_BUDGET", "")
    return Claude(
        id=model,
        api_key=api_key,
        max_tokens=max_output,
        thinking={"type": "enabled", "budget_tokens": int(budget)} if budget.isdigit() else None,
        client_params={"base_url": os.environ["CTXBED_ANTHROPIC_BASE_URL"]},
    )


def make_tool(spec, calls_by_tool):
    """An Agno `Function` answering its n-th call (over the scenario, all sessions) with
    results[n-1], then the last; a scripted failure raises with its text."""
    name = spec["name"]
    results = spec.get("results") or [{"text": "", "error": False}]

    def entrypoint(**_arguments):
        n = calls_by_tool[name] = calls_by_tool.get(name, 0) + 1
        result = results[min(n, len(results)) - 1]
        if result.get("error"):
            raise RuntimeError(result.get("text", ""))
        return result.get("text", "")

    return Function(
        name=name,
        description=spec.get("description") or name,
        parameters=spec.get("parameters") or {"type": "object", "properties": {}},
        entrypoint=entrypoint,
        skip_entrypoint_processing=True,
    )


def images(step):
    out = []
    for image in step.get("images") or []:
        out.append(
            Image(
                content=base64.b64decode(image["data"]),
                mime_type=image["media_type"],
                format=image["media_type"].split("/")[-1],
            )
        )
    return out or None


# ---- error classification ------------------------------------------------------------------------
# Agno catches the run's exception and returns a RunOutput with status `error` and the exception's
# text as its content: the kind is read from that text.

OVERFLOW_WORDS = (
    "context_length_exceeded",
    "prompt is too long",
    "maximum context length",
    "context window",
    "contextwindowexceedederror",
    "input tokens exceed",
)


def classify_text(text):
    low = (text or "").lower()
    if any(w in low for w in OVERFLOW_WORDS):
        return "context_overflow"
    if "429" in low or "rate limit" in low or "rate_limit" in low:
        return "rate_limited"
    if "timed out" in low or "timeout" in low:
        return "timeout"
    if re.search(r"^\d{3} |error code: \d{3}|status(?: code)?[ :=]+\d{3}", low):
        return "provider_error"
    if "expecting value" in low or "validation error" in low:
        return "malformed_reply"
    return "other"


class Scenario:
    def __init__(self, setup):
        state_dir = os.environ.get("CTXBED_STATE_DIR") or None
        self.tmp = None if state_dir else tempfile.mkdtemp(prefix="ctxbed-agno-")
        self.db = SqliteDb(db_file=str(Path(state_dir or self.tmp) / "agno.db"))
        window = int(os.environ.get("CTXBED_WINDOW", "8000"))
        self.stream = os.environ.get("CTXBED_STREAM", "0") == "1"
        self.calls_by_tool = {}
        self.agent = Agent(
            model=make_model(),
            instructions=setup.get("system") or None,
            tools=[make_tool(t, self.calls_by_tool) for t in setup.get("tools", [])],
            db=self.db,
            add_history_to_context=True,
            compaction=Compaction(compact_at_tokens=int(window * COMPACT_AT), on_context_overflow=True),
            telemetry=False,
        )

    def close(self):
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def step(self, msg):
        kwargs = dict(session_id=msg["session"], user_id=msg.get("user"), images=images(msg))
        if self.stream:
            for _event in self.agent.run(msg["input"], stream=True, **kwargs):
                pass
            output = self.agent.get_last_run_output(session_id=msg["session"])
        else:
            output = self.agent.run(msg["input"], **kwargs)
        if output is None:
            raise RuntimeError("no run output")
        if output.status == RunStatus.error:
            return None, str(output.content or "")
        content = output.content
        return (content if isinstance(content, str) else json.dumps(content, default=str)) if content is not None else "", None


def main():
    scenario, unsupported = None, None
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            api = os.environ.get("CTXBED_API", "openai")
            if api not in APIS:
                unsupported = f"CTXBED_API={api}"
                emit({"type": "unsupported", "reason": unsupported, "reset": True})
                continue
            scenario = Scenario(msg)
            emit({"type": "ready", "harness": HARNESS, "version": version("agno"), "context": "own", "reset": True})
        elif msg["type"] == "reset":
            if scenario is not None:
                scenario.close()
            scenario, unsupported = None, None
            apply_env(msg.get("env", {}))
        elif msg["type"] == "step":
            step = msg["step"]
            if scenario is None:
                emit({"type": "error", "step": step, "kind": "other", "message": unsupported or "step before setup"})
                continue
            try:
                text, error = scenario.step(msg)
                if error is None:
                    emit({"type": "reply", "step": step, "text": text})
                else:
                    emit({"type": "error", "step": step, "kind": classify_text(error), "message": error[:2000]})
            except Exception as exc:  # noqa: BLE001 - every failure becomes a protocol error line
                logging.exception("step %s failed", step)
                emit({"type": "error", "step": step, "kind": classify_text(str(exc)), "message": (str(exc) or type(exc).__name__)[:2000]})
    if scenario is not None:
        scenario.close()


if __name__ == "__main__":
    main()
    sys.exit(0)
