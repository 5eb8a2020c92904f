"""The LangChain agent that the protocol adapter (adapter.py) and the pytest port
(test_plugin.py) both run; adapter.py's docstring says what it configures and why."""

import threading

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langgraph.checkpoint.memory import InMemorySaver

from langchain_parts import build_tool


def build_agent(setup, model, checkpointer=None):
    """The agent for a scenario's setup. `checkpointer` keeps the sessions (the adapter passes
    `langchain_parts.build_checkpointer()`: on disk when CTXBED_STATE_DIR is set); a new
    `InMemorySaver` without one."""
    lock = threading.Lock()
    return create_agent(
        model,
        tools=[build_tool(spec, lock) for spec in setup.get("tools", [])],
        system_prompt=setup.get("system") or None,
        middleware=[SummarizationMiddleware(model=model, trigger=("fraction", 0.8), keep=("messages", 20))],
        checkpointer=InMemorySaver() if checkpointer is None else checkpointer,
    )
