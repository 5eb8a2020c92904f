"""What the LangChain-family adapters (peers/langchain, peers/deepagents) share: protocol output
on a private copy of standard output and the protocol loop, over `langchain_parts` (the chat
model for CTXBED_API, scripted tools, error kinds). Each adapter supplies only how it builds its
agent (see docs/peer-protocol.md).

Sessions: each step runs on the LangGraph thread named by its `session`, in the checkpointer
each setup makes (`langchain_parts.build_checkpointer`): an `InMemorySaver`, or, when
CTXBED_STATE_DIR is set, a `SqliteSaver` over a file in that directory, committed by the time the
step's answer is sent, so a new process (the same environment, `setup` again) continues every
session where the old one left it.

One process serves many scenarios: `ready` and `unsupported` say `"reset": true`, and a `reset`
line drops the agent (its model, its tools with their call counts, its checkpointer with every
session; a `SqliteSaver`'s connection is closed), empties the LangChain clients' module-level HTTP
client caches and takes the next scenario's environment; the next `setup` builds everything anew
from it, CTXBED_STATE_DIR (or its absence) included.

Importing this module first moves file descriptor 1 to standard error, so nothing a library
prints can reach the protocol stream.
"""
import json
import logging
import os
import sys
import traceback

_protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

from importlib.metadata import version  # noqa: E402

from langchain_parts import (  # noqa: E402,F401
    StepInterrupt,
    build_checkpointer,
    build_model,
    build_tool,
    classify,
    close_checkpointer,
    user_content,
)
from protocol_env import apply_env  # noqa: E402


def send(obj):
    _protocol.write(json.dumps(obj) + "\n")
    _protocol.flush()


# --- reset ------------------------------------------------------------------------------------





def forget_http_clients():
    """langchain_openai and langchain_anthropic keep the httpx clients they make in module-level
    caches; emptied, so the next scenario's model makes its own, as in a new process."""
    openai_clients = sys.modules.get("langchain_openai.chat_models._client_utils")
    if openai_clients is not None:
        openai_clients._cached_sync_httpx_client.cache_clear()
        openai_clients._cached_async_httpx_client.cache_clear()
    anthropic_clients = sys.modules.get("langchain_anthropic._client_utils")
    if anthropic_clients is not None:
        anthropic_clients._get_default_httpx_client.cache_clear()
        anthropic_clients._get_default_async_httpx_client.cache_clear()


# --- main loop --------------------------------------------------------------------------------


def main(harness, package, build_agent, after_step=None):
    """Speaks the protocol on standard input and output until input ends: one scenario, or many
    with a `reset` line between them. `build_agent(setup, model, checkpointer)` builds the agent;
    `after_step()`, if given, runs after each step, before its answer is sent."""
    agent, checkpointer = None, None
    for line in iter(sys.stdin.readline, ""):
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            model = build_model()
            if model is None:
                reason = f"no client for CTXBED_API={os.environ.get('CTXBED_API')!r}"
                send({"type": "unsupported", "reason": reason, "reset": True})
                continue
            if checkpointer is not None:
                close_checkpointer(checkpointer)
            checkpointer = build_checkpointer()
            agent = build_agent(msg, model, checkpointer)
            send({"type": "ready", "harness": harness, "version": version(package), "reset": True, "interrupts": True})
        elif msg["type"] == "reset":
            # Nothing of the scenario is kept; no line answers a reset.
            agent = None
            if checkpointer is not None:
                close_checkpointer(checkpointer)
                checkpointer = None
            forget_http_clients()
            apply_env(msg.get("env", {}))
        elif msg["type"] == "step":
            step = msg["step"]
            try:
                if agent is None:
                    raise RuntimeError("step before a successful setup")
                # The step's text, then any images it attaches (`user_content`); a plain string without.
                # The run's checkpoints are written (and, on disk, committed) before invoke returns.
                StepInterrupt.begin(msg)
                result = agent.invoke(
                    {"messages": [{"role": "user", "content": user_content(msg)}]},
                    {"configurable": {"thread_id": msg["session"]}, "metadata": {"user_id": msg.get("user")}},
                )
                if StepInterrupt.happened:
                    # Paused at the tool call; the next step's new message goes on in the same thread.
                    answer = {"type": "interrupted", "step": step}
                else:
                    answer = {"type": "reply", "step": step, "text": result["messages"][-1].text}
            except Exception as exc:  # noqa: BLE001 - every failure is reported on the protocol
                traceback.print_exc(file=sys.stderr)
                kind, message = classify(exc)
                answer = {"type": "error", "step": step, "kind": kind, "message": message[:2000]}
            if after_step is not None:
                after_step()
            send(answer)
        else:
            print(f"{harness} adapter: ignoring line of type {msg.get('type')!r}", file=sys.stderr)
    if checkpointer is not None:
        close_checkpointer(checkpointer)
