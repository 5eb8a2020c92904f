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
  * A checkpointer, `thread_id` = the step's session, so the steps of one session continue one
    conversation and a new session starts an empty one: `InMemorySaver`, or, when
    CTXBED_STATE_DIR is set (a scenario that restarts the harness), LangGraph's persistent
    `SqliteSaver` over `<CTXBED_STATE_DIR>/langgraph-checkpoints.sqlite`, so a new process
    continues each thread as the old one left it: the whole graph state, so the messages together
    with deepagents' summarisation event (summary and cutoff), its `_summarization_session_id`
    and the offloaded history in the in-state backend's files (`shared/langchain_parts.py`,
    `build_checkpointer`).
  * One `StructuredTool` per scripted tool, with the scenario's JSON schema passed through as
    its argument schema; a failing result raises `ToolException`, which LangChain reports to
    the model as the tool message's content with status "error" (`handle_tool_error=True`).

One process serves many scenarios (a `reset` line between them, `shared/langchain_family.py`);
each setup builds the agent anew and restarts the seeded ids below where a new process has them,
or, when CTXBED_STATE_DIR holds sessions an earlier process kept, where that process stopped (the
generator's state is kept there beside the checkpoints after each step).

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

import json
import os
import sys
import threading
from pathlib import Path

# The shared LangChain-family code; imported first, as it moves standard output aside.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "shared"))
import langchain_family as family  # noqa: E402
from deepagents import create_deep_agent  # noqa: E402

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
try:
    import opentelemetry.propagate  # noqa: E402,F401  (imported by the Anthropic SDK on its first request)
except ImportError:
    pass  # older environments (the bug zoo's, through CTXBED_PEER_ENV) have no OpenTelemetry to draw ids

IDS_AT_SETUP["anthropic"] = _ids.getstate()


# Sessions kept under CTXBED_STATE_DIR outlive the process, and so must the seeded generator: a
# new process that drew the same ids again would give a new message the id of one already in the
# thread, and LangGraph's message reducer would replace that old message with it. So the
# generator's state is saved with the sessions after every step, and a new process continues it
# where the old one stopped, drawing exactly the ids an uninterrupted process would.


def ids_file():
    """Where the generator's state is kept, or None when sessions live in memory."""
    state_dir = os.environ.get("CTXBED_STATE_DIR")
    return os.path.join(state_dir, "deepagents-uuid-generator.json") if state_dir else None


def save_ids():
    path = ids_file()
    if path is None:
        return
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(_ids.getstate(), f)
    os.replace(path + ".tmp", path)


def build_agent(setup, model, checkpointer):
    _ids.setstate(IDS_AT_SETUP[os.environ["CTXBED_API"]])
    lock = threading.Lock()
    agent = create_deep_agent(
        model=model,
        tools=[family.build_tool(spec, lock) for spec in setup.get("tools", [])],
        system_prompt=setup.get("system") or None,
        checkpointer=checkpointer,
    )
    path = ids_file()
    if path is not None and os.path.exists(path):
        # A new process continuing the sessions an earlier one kept: its ids, where it stopped.
        with open(path, encoding="utf-8") as f:
            version_, internal, gauss_next = json.load(f)
        _ids.setstate((version_, tuple(internal), gauss_next))
    return agent


if __name__ == "__main__":
    family.main("deepagents", "deepagents", build_agent, after_step=save_ids)
