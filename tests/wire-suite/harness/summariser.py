"""A small harness of the test-bed's own (standard library only) that keeps a conversation within
its window by summarising, with its summary request in one of three shapes real harnesses use,
none of which says "summarise":

- `system`: the instruction in the system prompt, the history as a plain transcript;
- `last_user`: the history as messages, the instruction in a last user turn;
- `tags`: the history wrapped in the harness's own tags, the instruction after it.

It speaks OpenAI Chat Completions only (`unsupported` otherwise). Before each request it
estimates the request (ASCII at 2 characters a token, other characters 1.5 tokens) and, past 60 %
of the window less the output budget, replaces every earlier turn of the session with the
summary's text; after a context overflow it does the same and retries once.
Usage: summariser.py SHAPE (the protocol is docs/peer-protocol.md).
"""

import json
import os
import sys
import urllib.error
import urllib.request

SHAPE = sys.argv[1]
URL = os.environ.get("CTXBED_OPENAI_BASE_URL", "") + "/chat/completions"
MODEL = os.environ.get("CTXBED_MODEL", "m")
WINDOW = int(os.environ.get("CTXBED_WINDOW", "8000"))
MAX_OUTPUT = int(os.environ.get("CTXBED_MAX_OUTPUT_TOKENS", "512"))
RECAP = "Write a brief recap of the conversation so far, keeping file names and findings."


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def estimate(value) -> int:
    text = json.dumps(value, ensure_ascii=False)
    ascii_chars = sum(1 for c in text if ord(c) < 128)
    return ascii_chars // 2 + (len(text) - ascii_chars) * 3 // 2


def post(body):
    request = urllib.request.Request(URL, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return 200, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def transcript(messages) -> str:
    lines = []
    for m in messages:
        if m["role"] == "tool":
            lines.append(f"tool result: {m['content'][:200]}")
        elif m.get("tool_calls"):
            lines.append("assistant called: " + ", ".join(c["function"]["name"] for c in m["tool_calls"]))
        elif m.get("content"):
            lines.append(f"{m['role']}: {m['content']}")
    return "\n".join(lines)


def recap_request(system, old):
    if SHAPE == "system":
        messages = [
            {"role": "system", "content": "You compress conversations for a coding agent. " + RECAP},
            {"role": "user", "content": transcript(old)},
        ]
    elif SHAPE == "last_user":
        messages = ([{"role": "system", "content": system}] if system else []) + old + [{"role": "user", "content": RECAP}]
    else:
        messages = [
            {"role": "system", "content": system or "You are a helpful assistant."},
            {"role": "user", "content": f"<conversation>\n{transcript(old)}\n</conversation>\nRecap the above."},
        ]
    return {"model": MODEL, "messages": messages, "max_tokens": MAX_OUTPUT}


def compact(system, history, start):
    """Replaces the turns before `start` (the current turn's first message) with a recap."""
    old = history[:start]
    if not old:
        return history, start
    status, answer = post(recap_request(system, old))
    text = answer["choices"][0]["message"].get("content") or "" if status == 200 else "(no recap)"
    kept = [{"role": "user", "content": "Earlier in this conversation: " + text}, {"role": "assistant", "content": "Understood."}]
    return kept + history[start:], len(kept)


def main():
    setup = json.loads(sys.stdin.readline())
    if os.environ.get("CTXBED_API") != "openai":
        emit({"type": "unsupported", "reason": "this test harness speaks Chat Completions only"})
        return
    system = setup.get("system") or ""
    specs = {t["name"]: t for t in setup.get("tools", [])}
    tools = [{"type": "function", "function": {"name": n, "description": t["description"], "parameters": t["parameters"]}} for n, t in specs.items()]
    calls = {}
    sessions = {}
    emit({"type": "ready", "harness": f"summariser-{SHAPE}", "version": "0"})
    budget = (WINDOW - MAX_OUTPUT) * 6 // 10
    for line in sys.stdin:
        step = json.loads(line)
        history = sessions.get(step["session"], [])
        start = len(history)
        history = history + [{"role": "user", "content": step["input"]}]
        retried = False
        while True:
            body = {"model": MODEL, "messages": ([{"role": "system", "content": system}] if system else []) + history,
                    "tools": tools, "max_tokens": MAX_OUTPUT}
            if estimate(body) > budget and start > 0:
                history, start = compact(system, history, start)
                continue
            status, answer = post(body)
            if status != 200:
                overflow = status == 400 and "context" in str(answer).lower()
                if overflow and not retried and start > 0:
                    retried = True
                    history, start = compact(system, history, start)
                    continue
                emit({"type": "error", "step": step["step"], "kind": "context_overflow" if overflow else "provider_error", "message": str(answer)[:2000]})
                break
            message = answer["choices"][0]["message"]
            if message.get("tool_calls"):
                history.append({"role": "assistant", "content": message.get("content"), "tool_calls": message["tool_calls"]})
                for call in message["tool_calls"]:
                    name = call["function"]["name"]
                    n = calls[name] = calls.get(name, 0) + 1
                    results = specs[name]["results"]
                    result = results[min(n, len(results)) - 1]
                    history.append({"role": "tool", "tool_call_id": call["id"], "content": result["text"]})
                continue
            history.append({"role": "assistant", "content": message.get("content") or ""})
            sessions[step["session"]] = history
            emit({"type": "reply", "step": step["step"], "text": message.get("content") or ""})
            break


if __name__ == "__main__":
    main()
