"""The LangChain agent that the protocol adapter (adapter.py) and the pytest port
(test_plugin.py) both run; adapter.py's docstring says what it configures and why."""

import threading

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langgraph.checkpoint.memory import InMemorySaver

from langchain_parts import build_tool


def build_agent(setup, model):
    lock = threading.Lock()
    return create_agent(
        model,
        tools=[build_tool(spec, lock) for spec in setup.get("tools", [])],
        system_prompt=setup.get("system") or None,
        middleware=[SummarizationMiddleware(model=model, trigger=("fraction", 0.8), keep=("messages", 20))],
        checkpointer=InMemorySaver(),
    )
