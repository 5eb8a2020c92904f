"""What the LangChain-family adapters (peers/langchain, peers/deepagents) share: protocol output
on a private copy of standard output and the protocol loop, over `langchain_parts` (the chat
model for CTXBED_API, scripted tools, error kinds). Each adapter supplies only how it builds its
agent (see docs/peer-protocol.md).

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

from langchain_parts import build_model, build_tool, classify  # noqa: E402,F401


def send(obj):
    _protocol.write(json.dumps(obj) + "\n")
    _protocol.flush()


# --- main loop --------------------------------------------------------------------------------


def main(harness, package, build_agent):
    """Speaks the protocol on standard input and output until input ends."""
    agent = None
    for line in iter(sys.stdin.readline, ""):
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "setup":
            model = build_model()
            if model is None:
                send({"type": "unsupported", "reason": f"no client for CTXBED_API={os.environ.get('CTXBED_API')!r}"})
                continue
            agent = build_agent(msg, model)
            send({"type": "ready", "harness": harness, "version": version(package)})
        elif msg["type"] == "step":
            step = msg["step"]
            try:
                if agent is None:
                    raise RuntimeError("step before a successful setup")
                result = agent.invoke(
                    {"messages": [{"role": "user", "content": msg["input"]}]},
                    {"configurable": {"thread_id": msg["session"]}, "metadata": {"user_id": msg.get("user")}},
                )
                send({"type": "reply", "step": step, "text": result["messages"][-1].text})
            except Exception as exc:  # noqa: BLE001 - every failure is reported on the protocol
                traceback.print_exc(file=sys.stderr)
                kind, message = classify(exc)
                send({"type": "error", "step": step, "kind": kind, "message": message[:2000]})
        else:
            print(f"{harness} adapter: ignoring line of type {msg.get('type')!r}", file=sys.stderr)
