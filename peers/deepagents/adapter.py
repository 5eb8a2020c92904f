"""ctxbed peer adapter for deepagents `create_deep_agent` (see docs/peer-protocol.md).

What it configures, and why:
  * The chat model, passed explicitly as an object (so deepagents never falls back to its
    default Anthropic model, and never swaps Chat Completions for the Responses API as it does
    for "openai:..." strings): `ChatOpenAI` or `ChatAnthropic` pointed at the mock (with
    `use_responses_api=True` when a scenario pins the Responses API, CTXBED_API=responses), with
    `max_tokens = CTXBED_MAX_OUTPUT_TOKENS`, streaming when `CTXBED_STREAM=1`, the library's
    default retries. The mock's model name has no LangChain model profile, so the window is
    declared as LangChain's docs say to for such models: `profile={"max_input_tokens":
    CTXBED_WINDOW, ...}`. deepagents sizes its own summarisation from that profile
    (`compute_summarization_defaults`: trigger at 85% of the window, keep the last 10%, and it
    reserves the output budget plus 5% before sending); without it, it would wait for 170,000
    tokens.
  * Everything else is deepagents' default stack (filesystem tools on the in-state backend,
    the general-purpose subagent, summarisation, tool-call patching, prompt caching), with the
    scenario's tools added to it.
  * `InMemorySaver` checkpointer, `thread_id` = the step's session, so the steps of one session
    continue one conversation and a new session starts an empty one.
  * One `StructuredTool` per scripted tool, with the scenario's JSON schema passed through as
    its argument schema; a failing result raises `ToolException`, which LangChain reports to
    the model as the tool message's content with status "error" (`handle_tool_error=True`).

One process serves many scenarios (a `reset` line between them, `shared/langchain_family.py`);
each setup builds the agent anew and restarts the seeded ids below where a new process has them.

Standard output carries protocol lines only: the real stdout is kept aside and file
descriptor 1 is pointed at standard error, so prints, warnings and logging end up there.
"""

import random
import uuid

# Determinism, as in any seeded test-bed: deepagents names its offloaded-history file
# `session_<uuid4 hex>` and puts that path in the summary message it sends, so a fresh random id
# would change the request's exact token count from run to run. The ids are drawn from a seeded
# generator instead, installed before any library is imported (imports draw ids too); the
# harness's logic is untouched.
_ids = random.Random(0)
uuid.uuid4 = lambda: uuid.UUID(int=_ids.getrandbits(128), version=4)

import os
import sys
import threading
from pathlib import Path

# The shared LangChain-family code; imported first, as it moves standard output aside.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shared"))
import langchain_family as family  # noqa: E402
from deepagents import create_deep_agent  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

# A kept process (`reset`) must draw the ids a new one would. A new process also draws while it
# imports its provider's packages on its first setup and first request (the Anthropic SDK brings
# in OpenTelemetry, whose modules draw five ids as they load); a kept process has them already.
# So both providers' packages are imported here, and each setup puts the generator where a new
# process stands once its provider's packages are in.
_loaded = _ids.getstate()
import langchain_openai  # noqa: E402,F401

IDS_AT_SETUP = {"openai": _ids.getstate(), "responses": _ids.getstate()}
_ids.setstate(_loaded)
import langchain_anthropic  # noqa: E402,F401
import opentelemetry.propagate  # noqa: E402,F401  (imported by the Anthropic SDK on its first request)

IDS_AT_SETUP["anthropic"] = _ids.getstate()


def build_agent(setup, model):
    _ids.setstate(IDS_AT_SETUP[os.environ["CTXBED_API"]])
    lock = threading.Lock()
    return create_deep_agent(
        model=model,
        tools=[family.build_tool(spec, lock) for spec in setup.get("tools", [])],
        system_prompt=setup.get("system") or None,
        checkpointer=InMemorySaver(),
    )


if __name__ == "__main__":
    family.main("deepagents", "deepagents", build_agent)
