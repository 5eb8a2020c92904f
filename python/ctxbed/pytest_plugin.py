"""The pytest plugin (registered through the ``pytest11`` entry point when ctxbed is installed).

Fixtures:

- ``ctxbed_scenario``: a started :class:`ctxbed.WireRun`, parametrised over the built-in wire
  scenarios that ``@pytest.mark.ctxbed_wire("name", ...)`` names (every built-in one when the
  test has no such mark). The test points its agent at the run, answers ``run.steps()``, then
  calls ``ctxbed_scenario.check()``. A test that passes without having read the verdict
  (``check()``, ``violations()`` or ``finish()``) fails, unless the mark says
  ``assert_checked=False``; the mark's ``harness``, ``version`` and ``context`` keywords are
  what the trace's header says of the harness.
- ``ctxbed_server``: a started :class:`ctxbed.Server` for the built-in mock model that
  ``@pytest.mark.ctxbed_mock("name")`` names (or a mock-model file path, or the mock as a
  dict), for tests that only need a provider, what it received (``.requests()``) and the wire
  rules that broke (``.violations()``).
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List

import pytest

DEFAULT_MOCK = "wire-window-8k-english"


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "ctxbed_wire(*names, harness=None, version='0', context='own', assert_checked=True): "
        "run the test once per named built-in wire scenario (the ctxbed_scenario fixture); "
        "assert_checked=False lets the test pass without reading the run's verdict",
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


WIRE_OPTIONS = ("harness", "version", "context", "assert_checked")


def _wire_options(node: Any) -> Dict[str, Any]:
    """The keywords of the test's ``ctxbed_wire`` marks (the closest wins)."""
    options: Dict[str, Any] = {}
    for mark in reversed(list(node.iter_markers("ctxbed_wire"))):
        options.update(mark.kwargs)
    unknown = sorted(set(options) - set(WIRE_OPTIONS))
    if unknown:
        raise pytest.UsageError(
            f"ctxbed_wire has no keyword {', '.join(unknown)} (it takes {', '.join(WIRE_OPTIONS)})"
        )
    return options


@pytest.fixture
def ctxbed_scenario(request: Any, tmp_path: Any) -> Iterator[Any]:
    """A built-in wire scenario, running, with the test as its harness."""
    from ._wire import WireRun

    name = getattr(request, "param", None)
    if name is None:
        raise pytest.UsageError("ctxbed_scenario is parametrised by @pytest.mark.ctxbed_wire")
    options = {"harness": request.node.name, **_wire_options(request.node)}
    run = WireRun(name, logs=str(tmp_path / "ctxbed-conform"), **options)
    try:
        yield run
    finally:
        run.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: Any) -> Iterator[None]:
    """After a test body that passed: its wire run must have been checked (the test fails
    here, with conform's verdict, when it was not)."""
    __tracebackhide__ = True
    result = yield
    run = getattr(item, "funcargs", {}).get("ctxbed_scenario")
    if run is not None:
        run.assert_was_checked()
    return result


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
