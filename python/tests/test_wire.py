"""A harness's own test with the ctxbed pytest plugin: three built-in wire scenarios against
the tiny agent, and the same agent with a planted bug, whose violation the plugin reports."""

from __future__ import annotations

import pytest

from tiny_agent import ProviderError, TinyAgent


def drive(run, **options) -> None:
    """Point the agent at the scenario's mock, answer every step, report errors as errors."""
    tools = [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in run.tools
    ]

    def run_tool(name: str, arguments: str):
        result = run.tool(name).call(arguments)
        return {"text": result.text, "error": result.error}

    agent = TinyAgent(run.openai_base_url, run.model, tools, run_tool, run.system, run.max_output_tokens, **options)
    for step in run.steps():
        try:
            step.reply(agent.run(step.session, step.input))
        except ProviderError as error:
            kind = "context_overflow" if "context" in error.body else "provider_error"
            step.error(kind, str(error))


@pytest.mark.ctxbed_wire("basic-tool-round", "cut-stream", "tool-error")
def test_the_agent_keeps_the_wire_rules(ctxbed_scenario):
    drive(ctxbed_scenario)
    ctxbed_scenario.check()


@pytest.mark.ctxbed_wire("basic-tool-round")
def test_a_planted_pairing_bug_is_reported(ctxbed_scenario):
    drive(ctxbed_scenario, drop_tool_results=True)
    violations = ctxbed_scenario.violations()
    assert violations, "dropping tool results must break the pairing rule"
    assert any(v.rule == "pairing" for v in violations), repr(violations)
    shown = str(violations)
    assert "wire rule(s) broken" in shown and "trace of the steps named" in shown, shown


@pytest.mark.ctxbed_wire("window-english")
def test_an_agent_without_context_management_overflows(ctxbed_scenario):
    drive(ctxbed_scenario)
    violations = ctxbed_scenario.violations()
    assert any(v.rule == "window" for v in violations), repr(violations)


def test_the_server_fixture_records_what_it_received(ctxbed_server):
    agent = TinyAgent(ctxbed_server.openai_base_url, "wire-window-8k-english", [], lambda n, a: {}, "")
    try:
        agent.run("s1", "hello")
    except ProviderError:
        pass
    requests = ctxbed_server.requests()
    assert len(requests) == 1, requests


def test_the_in_process_adapter_runs_a_callable():
    import ctxbed.conform

    def factory(run):
        tools = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in run.tools
        ]
        agent = TinyAgent(
            run.openai_base_url, run.model, tools,
            lambda name, arguments: {"text": run.tool(name).call(arguments).text},
            run.system, run.max_output_tokens,
        )
        return lambda step: agent.run(step.session, step.input)

    verdicts = ctxbed.conform.run(factory, ["basic-tool-round", "window-english"])
    assert verdicts["basic-tool-round"].ok, str(verdicts["basic-tool-round"].violations)
    assert not verdicts["window-english"].ok
    assert "window" in verdicts["window-english"].rules


def post(server, body):
    """One Chat Completions request, its JSON answer or HTTP error status."""
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{server.openai_base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code


SMALL_MOCK = {
    "description": "a 200-token window that always answers",
    "window": 200,
    "turns": [{"reply": "fine"}],
}


@pytest.mark.ctxbed_mock(SMALL_MOCK)
def test_a_mock_given_as_a_dict_is_served_and_its_violations_computed(ctxbed_server):
    assert (ctxbed_server.model, ctxbed_server.window) == ("mock", 200)
    orphan = [
        {"role": "user", "content": "what is six times seven?"},
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
    ]
    post(ctxbed_server, {"model": "mock", "messages": orphan, "max_tokens": 16})
    post(ctxbed_server, {"model": "mock", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 500})
    violations = ctxbed_server.violations()
    assert [(v.rule, v.request) for v in violations] == [("pairing", 1), ("window", 2)], repr(violations)
    assert "call_1" in str(violations[0]) and "200-token window" in str(violations[1]), str(violations)
    assert [v.rule for v in ctxbed_server.violations(rules=["window"])] == ["window"]
    with pytest.raises(ValueError, match="unknown rule `input`"):
        ctxbed_server.violations(rules=["input"])


def test_a_wrong_dict_mock_is_refused_with_the_binary_s_diagnostic():
    import ctxbed

    with pytest.raises(RuntimeError, match="window"):
        ctxbed.serve({"window": "big", "turns": [{"reply": "x"}]})
    with pytest.raises(ValueError, match=r"turns\[0\]\.reply: TOML has no null"):
        ctxbed.serve({"turns": [{"reply": None}]})
