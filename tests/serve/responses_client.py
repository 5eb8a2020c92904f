"""The official `openai` Python client against `ctxbed serve`'s Responses API: a whole reply with
a call, a streamed reply whose reasoning item carries encrypted content, the reasoning handed
back (and the API's refusal when it is dropped), and the overflow whole and streamed, each raised
as the client's own error. Usage: responses_client.py OPENAI_BASE_URL; prints one line a check."""
import sys

import openai

client = openai.OpenAI(base_url=sys.argv[1], api_key="k", max_retries=0)
tools = [{"type": "function", "name": "read_log",
          "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]
question = [{"role": "user", "content": "Why did the build fail?"}]

whole = client.responses.create(model="wire", input="Why did the build fail?", tools=tools)
call = [item for item in whole.output if item.type == "function_call"][0]
print("whole:", call.name, call.arguments, whole.usage.total_tokens > 0)

events, final = [], None
for event in client.responses.create(model="wire", input=question, tools=tools, stream=True,
                                     include=["reasoning.encrypted_content"], store=False):
    events.append(event.type)
    if event.type == "response.completed":
        final = event.response
reasoning = final.output[0]
print("stream:", events[0], events[-1], [item.type for item in final.output],
      reasoning.encrypted_content.startswith("gAAAA"),
      final.usage.output_tokens_details.reasoning_tokens > 0)

returned = [item.model_dump(exclude_none=True) for item in final.output]
result = {"type": "function_call_output", "call_id": final.output[1].call_id, "output": "out of memory"}
try:
    client.responses.create(model="wire", input=question + returned[1:] + [result], tools=tools, store=False)
except openai.BadRequestError as error:
    print("dropped reasoning:", error.status_code, error.body["message"])
answer = client.responses.create(model="wire", input=question + returned + [result], tools=tools, store=False)
print("handed back:", answer.output_text)

try:
    client.responses.create(model="wire", input="word " * 5000)
except openai.BadRequestError as error:
    print("overflow whole:", error.status_code, error.code)
try:
    for event in client.responses.create(model="wire", input="word " * 5000, stream=True):
        pass
except openai.APIError as error:
    print("overflow stream:", type(error).__name__, error.code, error.message)
