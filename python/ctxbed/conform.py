"""An in-process adapter: run built-in wire scenarios against a Python callable, with no
JSON-lines program.

``agent_factory(run)`` is called once per scenario with the started :class:`ctxbed.WireRun`
(its base URLs, model, window, system prompt and tools), and again after each restart of a
scenario that restarts the harness (the agent must then find its sessions where it kept them,
under ``run.env["CTXBED_STATE_DIR"]``), and returns the agent: a callable that
takes a :class:`ctxbed.Step` and returns the step's reply text. An exception it raises answers
the step as an error, of the kind in its ``ctxbed_kind`` attribute when it has one, else
``other``. The verdicts are ``ctxbed conform``'s.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional

from ._wire import Step, Verdict, WireRun, scenarios as builtin_scenarios

Agent = Callable[[Step], str]


def run(
    agent_factory: Callable[[WireRun], Agent],
    scenarios: Optional[Iterable[str]] = None,
    *,
    harness: str = "python",
    version: str = "0",
    context: str = "own",
) -> Dict[str, Verdict]:
    """Run each scenario (every built-in one by default) and return its verdict by name."""
    names = list(scenarios) if scenarios is not None else builtin_scenarios()
    verdicts: Dict[str, Verdict] = {}
    for name in names:
        with WireRun(name, harness=harness, version=version, context=context) as wire:
            agent = agent_factory(wire)
            for step in wire.steps():
                if step.restarted:
                    # A new process would start here: the agent is built again.
                    agent = agent_factory(wire)
                try:
                    reply = agent(step)
                except Exception as error:  # the agent's failure is the step's answer
                    kind: Any = getattr(error, "ctxbed_kind", "other")
                    step.error(str(kind), f"{type(error).__name__}: {error}")
                else:
                    step.reply(reply)
            verdicts[name] = wire.finish()
    return verdicts
