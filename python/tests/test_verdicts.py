"""False verdicts the package must not give: a test that never reads its run's verdict, a
step never answered, a slow teardown after an exception, a trace that does not name the
harness, and a failure naming a log that is gone."""

from __future__ import annotations

import os
import time

import pytest

import ctxbed
import ctxbed.conform
from tiny_agent import TinyAgent

#: A user's test file, run by ``pytester`` in a pytest of its own: each test answers every step
#: without calling the model (so every scenario's verdict fails) and never reads the verdict.
UNCHECKED_TESTS = '''
import pytest

@pytest.mark.ctxbed_wire("basic-tool-round")
def test_forgets_the_check(ctxbed_scenario):
    for step in ctxbed_scenario.steps():
        step.reply("I never called the model")

@pytest.mark.ctxbed_wire("basic-tool-round", assert_checked=False)
def test_opts_out(ctxbed_scenario):
    for step in ctxbed_scenario.steps():
        step.reply("I never called the model")

def test_forgets_the_check_without_the_plugin():
    import ctxbed
    with ctxbed.wire_scenario("basic-tool-round") as run:
        for step in run.steps():
            step.reply("I never called the model")
'''


def plugin_args(pytestconfig: pytest.Config) -> list:
    """``-p ctxbed.pytest_plugin`` when the plugin is not installed (a run from the tree)."""
    return [] if pytestconfig.pluginmanager.has_plugin("ctxbed") else ["-p", "ctxbed.pytest_plugin"]


def test_a_run_whose_verdict_is_never_read_fails_the_test(pytester, pytestconfig):
    pytester.makepyfile(test_user=UNCHECKED_TESTS)
    result = pytester.runpytest_subprocess(*plugin_args(pytestconfig), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    shown = result.stdout.str()
    assert "verdict was never checked" in shown and "run.check()" in shown, shown
    assert "assert_checked=False" in shown, shown
    # The verdict nobody read is shown: this harness never called the model.
    assert "conform's verdict: fail" in shown and "model_called" in shown, shown


def test_an_unanswered_step_fails_at_once_and_never_passes():
    started = time.monotonic()
    with ctxbed.wire_scenario("basic-tool-round") as run:
        with pytest.raises(AssertionError, match=r"step 1 was not answered: call step\.reply"):
            for _step in run.steps():
                pass  # the test's code forgot step.reply(...)
        verdict = run.finish()
    assert time.monotonic() - started < 10, "reported at once, not at conform's 120 s step timeout"
    assert not verdict.ok
    assert "adapter" in verdict.rules, verdict.rules
    assert "step verdict: fail: adapter" in verdict.trace, verdict.trace
    assert "step verdict: pass" not in verdict.trace, verdict.trace
    assert "step 1 was never answered: the test's code took the next step" in verdict.trace


def test_a_loop_left_before_answering_fails_its_step():
    with ctxbed.wire_scenario("basic-tool-round") as run:
        for _step in run.steps():
            break
        verdict = run.finish()
    assert "step verdict: fail: adapter" in verdict.trace, verdict.trace
    assert "loop over run.steps() ended" in verdict.trace, verdict.trace


def test_teardown_after_an_exception_in_a_step_is_quick():
    started = time.monotonic()
    with pytest.raises(ValueError, match="the agent broke"):
        with ctxbed.wire_scenario("basic-tool-round") as run:
            for _step in run.steps():
                raise ValueError("the agent broke")
    assert time.monotonic() - started < 5, "the run ends when the test's side closes"


@pytest.mark.ctxbed_wire("basic-tool-round", harness="my-agent", version="2.0.1", context="docs recipe")
def test_the_trace_header_names_the_harness_the_mark_gives(ctxbed_scenario):
    for step in ctxbed_scenario.steps():
        step.reply("no model called")
    trace = ctxbed_scenario.finish().trace
    assert "\nharness my-agent 2.0.1\n" in trace, trace
    assert "context management: docs recipe" in trace, trace


def test_the_trace_header_names_the_harness_wire_scenario_gives():
    with ctxbed.wire_scenario("basic-tool-round", harness="their-agent", version="0.9") as run:
        for step in run.steps():
            step.reply("no model called")
        trace = run.finish().trace
    assert "\nharness their-agent 0.9\n" in trace, trace


def test_a_failure_names_a_log_that_is_still_there():
    with ctxbed.wire_scenario("basic-tool-round") as run:
        for step in run.steps():
            step.reply("no model called")
        with pytest.raises(ctxbed.WireRuleViolation) as failure:
            run.check()
        log = run.finish().log
    assert log is not None and f"adapter log: {log}" in str(failure.value), str(failure.value)
    assert os.path.isfile(log), f"{log} is kept after the run"
    assert os.path.isfile(log[: -len(".log")] + ".trace")
    # A passing run's logs go with it, and its verdict names none.
    verdicts = ctxbed.conform.run(tiny_agent_for, ["basic-tool-round"])
    assert verdicts["basic-tool-round"].ok, str(verdicts["basic-tool-round"].violations)
    assert verdicts["basic-tool-round"].log is None


def tiny_agent_for(run: ctxbed.WireRun):
    """The tiny agent on the run's mock, as ``ctxbed.conform.run`` takes it."""
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
