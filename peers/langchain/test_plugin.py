"""The LangChain row as a harness's own pytest file, through the ctxbed plugin: the same agent as
the protocol adapter (agent.py), every built-in wire scenario, and the trace each run gives is
the one `ctxbed conform --harness langchain` pins in golden/wire/<scenario>/langchain.snap
(all but the line naming the harness and the mark of a built-in scenario file), so the plugin's verdicts are the adapter's.

Run it with the langchain environment and the ctxbed wheel installed there:
`target/peers/langchain/bin/python -m pytest peers/langchain/test_plugin.py`.
"""

import os
import sys
from pathlib import Path

# No tracing or telemetry: nothing but loopback is reachable (as peers/langchain/run sets).
for variable in ("LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING", "LANGSMITH_TRACING", "LANGSMITH_TRACING_V2",
                 "LANGSMITH_OTEL_ENABLED"):
    os.environ[variable] = "false"
os.environ["OTEL_SDK_DISABLED"] = "true"

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "shared")]

from agent import build_agent  # noqa: E402
from langchain_parts import (  # noqa: E402
    build_checkpointer,
    build_model,
    classify,
    close_checkpointer,
    user_content,
)

GOLDEN = HERE.parent.parent / "golden" / "wire"


def comparable(trace: str) -> str:
    """The trace without what names the run rather than the behaviour: the harness line, and
    the `(built in)` that marks where a built-in scenario's file came from."""
    lines = (line.replace("(built in) ", "") for line in trace.splitlines())
    return "\n".join(line for line in lines if not line.startswith("harness ")).strip()


def golden_trace(scenario: str) -> str:
    text = (GOLDEN / scenario / "langchain.snap").read_text(encoding="utf-8")
    # An insta snapshot: a header between two `---` lines, then the trace.
    return text.split("\n---\n", 1)[1]


def test_langchain_through_the_plugin(ctxbed_scenario):
    run = ctxbed_scenario
    model = build_model(run.env)
    tools = [
        {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "results": [{"text": r.text, "error": r.error} for r in tool.results],
        }
        for tool in run.tools
    ]
    setup = {"system": run.system, "tools": tools}
    checkpointer = build_checkpointer(run.env)
    agent = build_agent(setup, model, checkpointer)
    for step in run.steps():
        if step.restarted:
            # A new process would start here: a new model, agent and checkpointer, which finds
            # each session where the old one kept it (under CTXBED_STATE_DIR).
            close_checkpointer(checkpointer)
            checkpointer = build_checkpointer(run.env)
            model = build_model(run.env)
            agent = build_agent(setup, model, checkpointer)
        try:
            result = agent.invoke(
                {"messages": [{"role": "user", "content": user_content({"input": step.input, "images": step.images})}]},
                {"configurable": {"thread_id": step.session}, "metadata": {"user_id": step.user}},
            )
            step.reply(result["messages"][-1].text)
        except Exception as exc:  # noqa: BLE001 - every failure is the step's answer
            kind, message = classify(exc)
            step.error(kind, message)
    close_checkpointer(checkpointer)
    verdict = run.finish()
    expected = golden_trace(run.name)
    assert comparable(verdict.trace) == comparable(expected), verdict.trace
