"""The pytest plugin (registered through the ``pytest11`` entry point when ctxbed is installed).

Fixtures:

- ``ctxbed_scenario``: a started :class:`ctxbed.WireRun`, parametrised over the built-in wire
  scenarios that ``@pytest.mark.ctxbed_wire("name", ...)`` names (every built-in one when the
  test has no such mark). The test points its agent at the run, answers ``run.steps()``, then
  ``assert not ctxbed_scenario.violations()``.
- ``ctxbed_server``: a started :class:`ctxbed.Server` for the built-in mock model that
  ``@pytest.mark.ctxbed_mock("name")`` names (or a mock-model file path, or the mock as a
  dict), for tests that only need a provider, what it received (``.requests()``) and the wire
  rules that broke (``.violations()``).
"""

from __future__ import annotations

from typing import Any, Iterator, List

import pytest

DEFAULT_MOCK = "wire-window-8k-english"


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "ctxbed_wire(*names): run the test once per named built-in wire scenario "
        "(the ctxbed_scenario fixture)",
    )
    config.addinivalue_line(
        "markers",
        "ctxbed_mock(name_or_path_or_dict): the mock model the ctxbed_server fixture serves",
    )


def _wire_names(metafunc: Any) -> List[str]:
    names: List[str] = []
    for mark in metafunc.definition.iter_markers("ctxbed_wire"):
        names.extend(mark.args)
    if names:
        return names
    from ._wire import scenarios

    return scenarios()


def pytest_generate_tests(metafunc: Any) -> None:
    if "ctxbed_scenario" in metafunc.fixturenames:
        names = _wire_names(metafunc)
        metafunc.parametrize("ctxbed_scenario", names, indirect=True, ids=names)


@pytest.fixture
def ctxbed_scenario(request: Any, tmp_path: Any) -> Iterator[Any]:
    """A built-in wire scenario, running, with the test as its harness."""
    from ._wire import WireRun

    name = getattr(request, "param", None)
    if name is None:
        raise pytest.UsageError("ctxbed_scenario is parametrised by @pytest.mark.ctxbed_wire")
    run = WireRun(name, harness=request.node.name, logs=str(tmp_path / "ctxbed-conform"))
    try:
        yield run
    finally:
        run.close()


@pytest.fixture
def ctxbed_server(request: Any) -> Iterator[Any]:
    """A mock model on loopback (``@pytest.mark.ctxbed_mock`` picks it)."""
    from ._serve import Server

    mark = request.node.get_closest_marker("ctxbed_mock")
    chosen = mark.args[0] if mark and mark.args else DEFAULT_MOCK
    given = isinstance(chosen, dict) or str(chosen).endswith(".toml") or "/" in str(chosen)
    server = Server(chosen) if given else Server(builtin=str(chosen))
    try:
        yield server
    finally:
        server.close()
