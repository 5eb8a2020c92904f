"""``ctxbed.wire_scenario``: one built-in wire scenario run against the calling test.

``ctxbed conform`` runs the scenario with a small relay as its adapter (``ctxbed._bridge``),
so the test body answers each step itself and conform judges what reached the mock, with the
same rules as for every adapter: nothing is re-implemented here.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from ._binary import binary, stop

#: How long the relay may take to connect back.
CONNECT_TIMEOUT_S = 30.0


def scenarios() -> List[str]:
    """The names of the built-in wire scenarios (``ctxbed conform --list``)."""
    listing = subprocess.run(
        [binary(), "conform", "--list"], capture_output=True, text=True, check=True
    ).stdout
    return [line.split()[0] for line in listing.splitlines() if line.strip()]


@dataclass
class ToolResult:
    """What a scripted tool returns: its text, and whether it failed."""

    text: str
    error: bool


@dataclass
class Tool:
    """A tool of the scenario. :meth:`call` returns its scripted results in turn (the n-th call,
    counted over the whole scenario, returns the n-th result; calls past the end the last)."""

    name: str
    description: str
    parameters: Dict[str, Any]
    results: List[ToolResult]
    calls: int = 0

    def call(self, arguments: Any = None) -> ToolResult:
        """The next scripted result; ``arguments`` are not inspected."""
        self.calls += 1
        return self.results[min(self.calls, len(self.results)) - 1]


@dataclass
class Step:
    """One agent call of the scenario: answer it with :meth:`reply` or :meth:`error`."""

    number: int
    input: str
    session: str
    user: str
    _run: "WireRun" = field(repr=False)
    #: Images the user attaches after the text, in order: each ``{"media_type": "image/png",
    #: "data": <standard base64 of the file>}``, to send as the harness sends a user's images.
    images: list = field(default_factory=list)
    #: True on the first step after the scenario restarts the harness: a user's process would
    #: be new here, so build the agent again from what it keeps under ``run.env["CTXBED_STATE_DIR"]``
    #: (nothing of it in memory may carry over).
    restarted: bool = False
    answered: bool = False

    def reply(self, text: str) -> None:
        """The agent's final text for this step."""
        self._run._send({"type": "reply", "step": self.number, "text": text})
        self.answered = True

    def error(self, kind: str, message: str) -> None:
        """The call failed: ``kind`` is one of ``context_overflow``, ``rate_limited``,
        ``timeout``, ``provider_error``, ``malformed_reply``, ``tool_error``,
        ``budget_refused``, ``other``."""
        self._run._send(
            {"type": "error", "step": self.number, "kind": kind, "message": message[:2000]}
        )
        self.answered = True


@dataclass
class Violation:
    """A broken wire rule, as conform found it in what reached the mock."""

    rule: str
    step: Optional[int]
    detail: str
    #: The request's number in a served record (``Server.violations``), else ``None``.
    request: Optional[int] = None

    def __str__(self) -> str:
        if self.step is not None:
            return f"step {self.step}: {self.rule}: {self.detail}"
        if self.request is not None:  # the detail names the request
            return f"{self.rule}: {self.detail}"
        return f"scenario: {self.rule}: {self.detail}"


class Violations(List[Violation]):
    """The violations of a run. ``str()`` is the readable report: each violation, then the
    trace of the steps they name (what :meth:`WireRun.check` raises with)."""

    def __init__(self, items: List[Violation], trace: str) -> None:
        super().__init__(items)
        self.trace = trace

    def __repr__(self) -> str:
        return "[" + "; ".join(str(v) for v in self) + "]"

    def __str__(self) -> str:
        if not self:
            return "no wire rule broken"
        lines = [f"{len(self)} wire rule(s) broken:"] + [f"  {v}" for v in self]
        steps = sorted({v.step for v in self if v.step is not None})
        excerpt = trace_excerpt(self.trace, steps)
        if excerpt:
            lines += ["", "trace of the steps named:", excerpt]
        return "\n".join(lines)


class WireRuleViolation(AssertionError):
    """Raised by :meth:`WireRun.check`: the run broke wire rules (the message says which, with
    the trace)."""


class UnansweredStep(AssertionError):
    """Raised by :meth:`WireRun.steps` when the test's code takes the next step (or leaves the
    loop) without answering the one it was given: conform fails that step at once."""


class UncheckedRun(AssertionError):
    """Raised when a run ends without its verdict having been read (:meth:`WireRun.check`,
    :meth:`WireRun.violations` or :meth:`WireRun.finish`) and ``assert_checked`` is on: such a
    test would pass whatever the harness sent."""


def trace_excerpt(trace: str, steps: List[int]) -> str:
    """The blocks of ``trace`` for ``steps`` (all of it when none is named)."""
    if not steps:
        return trace.rstrip()
    wanted = {f"step {n} " for n in steps}
    kept: List[str] = []
    keeping = False
    for line in trace.splitlines():
        if line.startswith("step "):
            keeping = any(line.startswith(prefix) for prefix in wanted)
        elif not line.startswith(" "):
            keeping = False
        if keeping:
            kept.append(line)
    return "\n".join(kept)


@dataclass
class Verdict:
    """conform's verdict on the run."""

    verdict: str
    ok: bool
    rules: List[str]
    violations: Violations
    problem: Optional[str]
    trace: str
    #: The adapter's log (its trace and requests beside it, ``.trace`` and ``.requests.jsonl``),
    #: when it is kept: always under the ``logs`` you gave, else only for a run that failed;
    #: ``None`` for a passing run whose logs are removed with the run.
    log: Optional[str]


class WireRun:
    """A built-in wire scenario, running: the mock is up, and :meth:`steps` yields each step for
    the test to answer. Use it as a context manager (:func:`wire_scenario` returns one)."""

    def __init__(
        self,
        name: str,
        *,
        harness: str = "python",
        version: str = "0",
        context: str = "own",
        logs: Optional[str] = None,
        assert_checked: bool = True,
    ) -> None:
        self.name = name
        #: Whether ending the run unchecked fails (:class:`UncheckedRun`).
        self.assert_checked = assert_checked
        self._checked = False
        self._scratch = tempfile.TemporaryDirectory(prefix="ctxbed-wire-")
        # Logs of our own choosing outlive the run only when it fails (then a failure names them).
        self._own_logs = logs is None
        self.logs = logs or tempfile.mkdtemp(prefix="ctxbed-wire-logs-")
        socket_path = os.path.join(self._scratch.name, "bridge.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(socket_path)
        self._listener.listen(1)
        self._listener.settimeout(0.2)
        relay = f"{shlex.quote(sys.executable)} -m ctxbed._bridge {shlex.quote(socket_path)}"
        env = dict(os.environ)
        # The relay imports this package from wherever this process found it.
        package_root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self._process = subprocess.Popen(
            [binary(), "conform", "--adapter", relay, "--scenario", name,
             "--format", "json", "--logs", self.logs],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        self._verdict: Optional[Verdict] = None
        try:
            self._start(harness, version, context)
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """Stop conform and free everything after a failed start (SIGTERM first: conform then
        stops its adapter's whole process group)."""
        stop(self._process, timeout=10, terminate=True)
        self._listener.close()
        self._scratch.cleanup()
        self._remove_logs()

    def _start(self, harness: str, version: str, context: str) -> None:
        self._connection = self._accept()
        self._reader = self._connection.makefile("r", encoding="utf-8")
        self._env: Dict[str, str] = self._read("env")["env"]
        setup = self._read("setup")
        # The steps before which conform replaces the adapter (a restart, not the end).
        self._restarts = set(setup.get("restarts", []))
        self._last_step = 0
        self.system: str = setup.get("system", "")
        self.tools: List[Tool] = [
            Tool(
                name=t["name"],
                description=t.get("description", ""),
                parameters=t.get("parameters", {}),
                results=[ToolResult(r["text"], bool(r.get("error"))) for r in t["results"]],
            )
            for t in setup.get("tools", [])
        ]
        self._ready = {"type": "ready", "harness": harness, "version": version, "context": context}
        self._send(self._ready)

    def _accept(self) -> socket.socket:
        waited = 0.0
        while waited < CONNECT_TIMEOUT_S:
            try:
                connection, _ = self._listener.accept()
                connection.settimeout(None)
                return connection
            except socket.timeout:
                waited += 0.2
                if self._process.poll() is not None:
                    break
        out, err = self._process.communicate()
        raise RuntimeError(f"ctxbed conform ended before its adapter started:\n{out}{err}")

    def _read(self, kind: str) -> Dict[str, Any]:
        line = self._reader.readline()
        if not line:
            raise RuntimeError(f"the scenario ended while a `{kind}` line was awaited")
        message = json.loads(line)
        if message.get("type") != kind:
            raise RuntimeError(f"expected a `{kind}` line, got {line.strip()}")
        return message

    def _send(self, message: Dict[str, Any]) -> None:
        self._connection.sendall((json.dumps(message) + "\n").encode())

    # What the harness under test is pointed at.
    @property
    def env(self) -> Dict[str, str]:
        """The ``CTXBED_*`` variables a protocol adapter gets (docs/peer-protocol.md), for code
        that already reads them."""
        return dict(self._env)

    @property
    def api(self) -> str:
        """``openai`` (OpenAI: Chat Completions or the Responses API, as the harness prefers),
        ``responses`` (the scenario pins OpenAI's Responses API) or ``anthropic`` (Messages)."""
        return self._env["CTXBED_API"]

    @property
    def openai_base_url(self) -> str:
        return self._env["CTXBED_OPENAI_BASE_URL"]

    @property
    def anthropic_base_url(self) -> str:
        return self._env["CTXBED_ANTHROPIC_BASE_URL"]

    @property
    def model(self) -> str:
        return self._env["CTXBED_MODEL"]

    @property
    def api_key(self) -> str:
        return self._env.get("CTXBED_API_KEY", "ctxbed-test")

    @property
    def window(self) -> Optional[int]:
        """The model's context window in tokens, as a user would configure it."""
        value = self._env.get("CTXBED_WINDOW")
        return int(value) if value else None

    @property
    def max_output_tokens(self) -> int:
        return int(self._env.get("CTXBED_MAX_OUTPUT_TOKENS", "1024"))

    @property
    def thinking_budget(self) -> Optional[int]:
        """Anthropic's extended thinking ``budget_tokens`` to ask for in every Messages request,
        when the scenario turns thinking on (else ``None``)."""
        value = self._env.get("CTXBED_THINKING_BUDGET")
        return int(value) if value else None

    @property
    def stream(self) -> bool:
        """Whether to use the harness's streaming mode."""
        return self._env.get("CTXBED_STREAM") == "1"

    def tool(self, name: str) -> Tool:
        """The scenario's tool ``name``."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(f"the scenario has no tool {name!r}")

    def steps(self) -> Iterator[Step]:
        """Each step in turn; the next comes once the previous one is answered. Where the
        scenario restarts the harness, the next step says so (``Step.restarted``)."""
        restarted = False
        while True:
            line = self._reader.readline()
            if not line:
                if self._last_step + 1 not in self._restarts:
                    return
                self._reconnect()
                restarted = True
                continue
            message = json.loads(line)
            if message.get("type") != "step":
                raise RuntimeError(f"expected a `step` line, got {line.strip()}")
            self._last_step = message["step"]
            step = Step(
                number=message["step"],
                input=message["input"],
                session=message.get("session", ""),
                user=message.get("user", ""),
                _run=self,
                images=message.get("images", []),
                restarted=restarted,
            )
            try:
                yield step
            except GeneratorExit:
                # The loop was left (`break`, `return`): an unanswered step fails now, not at
                # conform's step timeout.
                if not step.answered:
                    self._give_up(step, "the test's loop over run.steps() ended")
                raise
            if not step.answered:
                self._give_up(step, "the test's code took the next step")
                raise UnansweredStep(
                    f"{self.name}: step {step.number} was not answered: call step.reply(text) "
                    "or step.error(kind, message) for each step before taking the next"
                )
            restarted = False

    def _give_up(self, step: Step, why: str) -> None:
        """Tells conform the step will never be answered, and why (its trace says so)."""
        reason = f"{why} without answering it (step.reply or step.error was never called)"
        try:
            self._send({"type": "unanswered", "step": step.number, "reason": reason})
        except OSError:
            pass  # conform has already ended the run

    def _reconnect(self) -> None:
        """conform replaced the relay (a restart): take the new one's connection, read its
        environment and ``setup`` again and answer ``ready`` as before."""
        self._hang_up()
        self._connection = self._accept()
        self._reader = self._connection.makefile("r", encoding="utf-8")
        self._env = self._read("env")["env"]
        self._read("setup")
        self._send(self._ready)

    def _hang_up(self) -> None:
        """Closes our side of the relay's connection. The file object read from it holds the
        socket open too, so both are closed: only then does the relay see the end."""
        self._reader.close()
        self._connection.close()

    def finish(self) -> Verdict:
        """End the run (a step left unanswered fails it) and return conform's verdict."""
        self._checked = True
        if self._verdict is not None:
            return self._verdict
        self._hang_up()
        out, err = self._process.communicate()
        runs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        run = next((r for r in runs if r.get("type") == "run"), None)
        if run is None:
            raise RuntimeError(f"ctxbed conform gave no verdict:\n{out}{err}")
        violations = [Violation(v["rule"], v.get("step"), v["detail"]) for v in run["violations"]]
        problem = run.get("problem")
        if problem:
            violations.insert(0, Violation("adapter", None, problem))
        self._verdict = Verdict(
            verdict=run["verdict"],
            ok=run["ok"],
            rules=run["rules"],
            violations=Violations(violations, run["trace"]),
            problem=problem,
            trace=run["trace"],
            log=run["log"] if not run["ok"] or not self._own_logs else None,
        )
        return self._verdict

    def violations(self) -> Violations:
        """The broken rules (empty when the run passes); ends the run first."""
        return self.finish().violations

    def check(self) -> None:
        """End the run and raise :class:`WireRuleViolation` (an ``AssertionError``, so pytest
        reports it as a failed assertion, message as written) if any wire rule was broken."""
        __tracebackhide__ = True
        verdict = self.finish()
        if verdict.violations:
            raise WireRuleViolation(f"{self.name}: {verdict.violations}{_log_note(verdict)}")

    def assert_was_checked(self) -> None:
        """Raise :class:`UncheckedRun` if the verdict was never read and ``assert_checked`` is on
        (the pytest plugin calls this after the test; ``with wire_scenario(...)`` on exit). The
        message gives conform's verdict, which nothing else would show."""
        __tracebackhide__ = True
        if self._checked or not self.assert_checked:
            return
        verdict = self.finish()
        shown = "pass" if verdict.ok else f"fail\n{verdict.violations}{_log_note(verdict)}"
        raise UncheckedRun(
            f"{self.name}: the run's verdict was never checked, so this test passes whatever the "
            "harness sends. End the test with `run.check()` (or assert on `run.violations()`); "
            "to leave a run unchecked on purpose, pass `assert_checked=False` "
            "(`@pytest.mark.ctxbed_wire(..., assert_checked=False)` or "
            f"`ctxbed.wire_scenario(name, assert_checked=False)`).\nconform's verdict: {shown}"
        )

    def close(self) -> None:
        """End the run at once (conform stops when the relay sees our side close) and remove
        what it kept, but the logs of a failed run."""
        if self._verdict is None:
            self._hang_up()
            stop(self._process, timeout=30, terminate=False)
        self._listener.close()
        self._scratch.cleanup()
        if self._verdict is None or self._verdict.ok:
            self._remove_logs()

    def _remove_logs(self) -> None:
        if self._own_logs:
            shutil.rmtree(self.logs, ignore_errors=True)

    def __enter__(self) -> "WireRun":
        return self

    def __exit__(self, kind: Optional[type], *rest: object) -> None:
        try:
            if kind is None:
                self.assert_was_checked()
        finally:
            self.close()


def _log_note(verdict: Verdict) -> str:
    """The line naming a failed run's log, where it is kept."""
    if verdict.log is None:
        return ""
    return f"\n\nadapter log: {verdict.log} (the trace and the requests are beside it)"


def wire_scenario(name: str, **options: Any) -> WireRun:
    """Start the built-in wire scenario ``name`` (``ctxbed.scenarios()`` lists them) with the
    calling code as the harness: point your agent at ``run.openai_base_url`` (or
    ``anthropic_base_url``, as ``run.api`` says), answer each of ``run.steps()``, then
    ``run.check()``. Options: ``harness``, ``version`` and ``context`` (the trace's header),
    ``logs`` (a directory to keep the logs in), ``assert_checked=False`` (leaving the ``with``
    block without reading the verdict is then not an error)."""
    return WireRun(name, **options)
