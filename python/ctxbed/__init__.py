"""ctxbed for Python: test what your agent harness sends to the model.

- :func:`serve` starts a deterministic mock model on loopback, as the provider it imitates,
  and reads back every request it received.
- :func:`wire_scenario` runs one of the built-in wire scenarios (:func:`scenarios`) with your
  test as the harness, and returns the verdict of ``ctxbed conform``'s rules.
- The pytest plugin (``ctxbed.pytest_plugin``, registered on install) gives fixtures for both.

The binary installed with this package does the work; nothing here re-implements a rule.
"""

from ._binary import binary
from ._serve import Server, serve
from ._wire import (
    Step,
    Tool,
    ToolResult,
    UncheckedRun,
    UnansweredStep,
    Verdict,
    Violation,
    Violations,
    WireRuleViolation,
    WireRun,
    scenarios,
    wire_scenario,
)

__all__ = [
    "Server",
    "Step",
    "Tool",
    "ToolResult",
    "UncheckedRun",
    "UnansweredStep",
    "Verdict",
    "Violation",
    "Violations",
    "WireRuleViolation",
    "WireRun",
    "binary",
    "scenarios",
    "serve",
    "wire_scenario",
]
