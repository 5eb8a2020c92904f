"""ctxbed peer adapter for LangChain v1 `create_agent` (see docs/peer-protocol.md).

What it configures, and why:
  * The chat model: `ChatOpenAI` (Chat Completions) or `ChatAnthropic` (Messages), pointed at
    the mock, with `max_tokens = CTXBED_MAX_OUTPUT_TOKENS`, streaming when `CTXBED_STREAM=1`,
    and the library's default retries. The mock's model name has no LangChain model profile,
    so the window is declared the way LangChain's docs say to for such models:
    `profile={"max_input_tokens": CTXBED_WINDOW, ...}`.
  * `SummarizationMiddleware`, as LangChain's docs configure it for long conversations:
    `trigger=("fraction", 0.8)` (summarise once the history reaches 80% of the window) and
    `keep=("messages", 20)` (keep the 20 most recent messages verbatim; the documented default).
    The agent's own model writes the summary.
  * A checkpointer, `thread_id` = the step's session, so the steps of one session continue one
    conversation and a new session starts an empty one: `InMemorySaver`, or, when
    CTXBED_STATE_DIR is set (a scenario that restarts the harness), LangGraph's persistent
    `SqliteSaver` over `<CTXBED_STATE_DIR>/langgraph-checkpoints.sqlite`, so a new process
    continues each thread as the old one left it, the middleware's summary in place of what it
    summarised (`shared/langchain_parts.py`, `build_checkpointer`).
  * One `StructuredTool` per scripted tool, with the scenario's JSON schema passed through as
    its argument schema; a failing result raises `ToolException`, which LangChain reports to
    the model as the tool message's content with status "error" (`handle_tool_error=True`).

One process serves many scenarios (a `reset` line between them, `shared/langchain_family.py`);
each setup builds the model and agent anew.

Standard output carries protocol lines only: the real stdout is kept aside and file
descriptor 1 is pointed at standard error, so prints, warnings and logging end up there.
"""

import sys
from pathlib import Path

# The shared LangChain-family code; imported first, as it moves standard output aside.
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent / "shared")]
import langchain_family as family  # noqa: E402
from agent import build_agent  # noqa: E402


if __name__ == "__main__":
    family.main("langchain", "langchain", build_agent)
