"""The official Python clients against `ctxbed serve`: whole and streamed replies, tool calls
reassembled from deltas, the overflow raised as the client's own error type, and a signed thinking
block whose text was altered refused.
Usage: clients.py OPENAI_BASE_URL ANTHROPIC_BASE_URL; prints one line per check."""
import sys

import anthropic
import openai

openai_url, anthropic_url = sys.argv[1], sys.argv[2]
oa = openai.OpenAI(base_url=openai_url, api_key="k", max_retries=0)
an = anthropic.Anthropic(base_url=anthropic_url, api_key="k", max_retries=0)
tools = [{"type": "function", "function": {"name": "read_log", "parameters": {"type": "object"}}}]
anthropic_tools = [{"name": "read_log", "input_schema": {"type": "object"}}]

whole = oa.chat.completions.create(model="wire", messages=[{"role": "user", "content": "hi"}], tools=tools)
call = whole.choices[0].message.tool_calls[0]
print("openai whole:", call.function.name, call.function.arguments, whole.usage.total_tokens > 0)

text, calls = "", {}
for chunk in oa.chat.completions.create(model="wire", messages=[{"role": "user", "content": "hi"}], stream=True,
                                        stream_options={"include_usage": True}):
    for choice in chunk.choices:
        text += choice.delta.content or ""
print("openai stream:", text)

with an.messages.stream(model="wire", max_tokens=100, messages=[{"role": "user", "content": "hi"}],
                        tools=anthropic_tools) as stream:
    final = stream.get_final_message()
print("anthropic stream:", final.content[0].name, final.content[0].input, final.stop_reason)

reply = an.messages.create(model="wire", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
print("anthropic whole:", reply.content[0].text, reply.usage.input_tokens > 0)

try:
    oa.chat.completions.create(model="wire", messages=[{"role": "user", "content": "word " * 5000}])
except openai.BadRequestError as error:
    print("openai overflow:", error.status_code, error.code)

thinking = {"type": "enabled", "budget_tokens": 1024}
ask = {"role": "user", "content": "Think first."}
with an.messages.stream(model="wire", max_tokens=2048, thinking=thinking, messages=[ask]) as stream:
    thought = stream.get_final_message()
block = thought.content[0]
print("anthropic thinking:", block.type, block.signature.startswith("ctxbed-"), thought.content[1].text)
altered = {"type": "thinking", "thinking": block.thinking + " (edited)", "signature": block.signature}
try:
    an.messages.create(model="wire", max_tokens=2048, thinking=thinking, messages=[
        ask, {"role": "assistant", "content": [altered, {"type": "text", "text": thought.content[1].text}]},
        {"role": "user", "content": "And?"}])
except anthropic.BadRequestError as error:
    print("anthropic altered thinking:", error.status_code, error.body["error"]["message"])
