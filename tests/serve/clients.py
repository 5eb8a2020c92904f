"""The official Python clients against `ctxbed serve`: whole and streamed replies, tool calls
reassembled from deltas, the overflow raised as the client's own error type, and a signed thinking
block whose text was altered refused; redacted thinking handed back whole; both prompt caches read back.
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

with an.messages.stream(model="wire", max_tokens=2048, thinking=thinking, messages=[ask],
                        tools=anthropic_tools) as stream:
    withheld = stream.get_final_message()
kinds = [block.type for block in withheld.content]
print("anthropic redacted:", kinds, "more than I may show" not in withheld.content[0].data)
result = {"type": "tool_result", "tool_use_id": withheld.content[1].id, "content": "ld: out of memory"}
answered = an.messages.create(model="wire", max_tokens=2048, thinking=thinking, tools=anthropic_tools, messages=[
    ask, {"role": "assistant", "content": [block.model_dump() for block in withheld.content]},
    {"role": "user", "content": [result]}])
print("anthropic redacted handed back:", answered.content[-1].text)

rules = "The build runs in stages and each stage names itself in the last lines of its log. " * 70
system = [{"type": "text", "text": rules, "cache_control": {"type": "ephemeral"}}]
first = an.messages.create(model="wire", max_tokens=100, system=system, messages=[{"role": "user", "content": "One?"}])
second = an.messages.create(model="wire", max_tokens=100, system=system, messages=[{"role": "user", "content": "Two?"}])
print("anthropic cache:", first.usage.cache_creation_input_tokens >= 1024, first.usage.cache_read_input_tokens,
      second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens,
      second.usage.cache_creation_input_tokens)
with an.messages.stream(model="wire", max_tokens=100, system=system,
                        messages=[{"role": "user", "content": "Three?"}]) as stream:
    third = stream.get_final_message()
print("anthropic cache stream:", third.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens)

messages = [{"role": "system", "content": rules}, {"role": "user", "content": "One?"}]
oa.chat.completions.create(model="wire", messages=messages)
again = oa.chat.completions.create(model="wire", messages=messages[:1] + [{"role": "user", "content": "Two?"}])
cached = again.usage.prompt_tokens_details.cached_tokens
print("openai cache:", cached >= 1024, cached % 128 == 0, cached < again.usage.prompt_tokens)
usage = None
for chunk in oa.chat.completions.create(model="wire", messages=messages[:1] + [{"role": "user", "content": "Three?"}],
                                        stream=True, stream_options={"include_usage": True}):
    usage = chunk.usage or usage
print("openai cache stream:", usage.prompt_tokens_details.cached_tokens == cached)
