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
