"""``ctxbed.serve``: a mock model on loopback, as the provider it imitates."""

from __future__ import annotations

import json
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Union

from ._binary import binary, stop
from ._toml import dumps as toml_dumps
from ._wire import Violation, Violations

#: A mock model: a file (TOML, as ``ctxbed serve`` reads), or the same document as a dict.
Mock = Union[str, Path, Dict[str, Any]]

LISTENING = "listening on http://"


class Server:
    """A running ``ctxbed serve``. Use it as a context manager (:func:`serve` returns one)."""

    def __init__(
        self,
        mock: Optional[Mock] = None,
        *,
        builtin: Optional[str] = None,
        name: str = "mock",
        time_scale: float = 0.0,
        extra_args: Optional[List[str]] = None,
    ) -> None:
        if (mock is None) == (builtin is None):
            raise ValueError("give a mock model (a file or a dict) or builtin=NAME, not both or neither")
        self._scratch = tempfile.TemporaryDirectory(prefix="ctxbed-serve-")
        scratch = Path(self._scratch.name)
        self.record_path = scratch / "requests.jsonl"
        if isinstance(mock, dict):
            # The model is named by its file's stem, as for any mock file.
            mock_path = scratch / f"{name}.toml"
            try:
                mock_path.write_text(toml_dumps(mock), encoding="utf-8")
            except (TypeError, ValueError):
                self._scratch.cleanup()
                raise
            mock = mock_path
        args = [binary(), "serve", "--listen", "127.0.0.1:0", "--record", str(self.record_path)]
        args += ["--time-scale", repr(float(time_scale))]
        args += ["--builtin", builtin] if builtin is not None else [str(mock)]
        args += extra_args or []
        self._process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        first = self._process.stdout.readline()
        if not first.startswith(LISTENING):
            self._process.kill()
            _, stderr = self._process.communicate()
            self._scratch.cleanup()
            raise RuntimeError(f"ctxbed serve did not start: {first}{stderr}".strip())
        self.address = first[len(LISTENING) :].strip()
        self._models: Optional[List[Dict[str, Any]]] = None

    @property
    def openai_base_url(self) -> str:
        """The base URL for an OpenAI client (``…/chat/completions`` is appended)."""
        return f"http://{self.address}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The base URL for an Anthropic client (``/v1/messages`` is appended)."""
        return f"http://{self.address}"

    def models(self) -> List[Dict[str, Any]]:
        """The served models as ``GET /v1/models`` lists them (``id``, ``context_window``)."""
        if self._models is None:
            import urllib.request  # here, so that `import ctxbed` stays fast

            with urllib.request.urlopen(f"{self.openai_base_url}/models", timeout=10) as answer:
                self._models = list(json.load(answer)["data"])
        return self._models

    @property
    def model(self) -> str:
        """The (first) served model's name: the mock file's stem, or the builtin's name."""
        return str(self.models()[0]["id"])

    @property
    def window(self) -> Optional[int]:
        """The (first) served model's context window in tokens (``None`` when unbounded)."""
        window = self.models()[0].get("context_window")
        return int(window) if window is not None else None

    def requests(self) -> List[Any]:
        """Every exchange so far, as the canonical records ``--record`` writes (one dict each);
        a torn last line is skipped with a warning (:func:`read_record`)."""
        return read_record(self.record_path)

    def violations(self, rules: Optional[Iterable[str]] = None) -> Violations:
        """The wire rules the requests so far break, computed by the binary
        (``ctxbed violations``): ``window``, ``pairing``, ``system``, ``duplicate_result`` and
        ``count_tokens`` by default, or the ``rules`` named. The rules that need a scenario's
        steps are :func:`ctxbed.wire_scenario`'s."""
        if not self.record_path.exists():
            return Violations([], "")
        args = [binary(), "violations", str(self.record_path), "--format", "json"]
        for rule in rules or []:
            args += ["--rule", rule]
        checked = subprocess.run(args, capture_output=True, text=True)
        if checked.returncode not in (0, 1):
            raise ValueError(checked.stderr.strip() or f"ctxbed violations exited {checked.returncode}")
        found = []
        for line in checked.stdout.splitlines():
            item = json.loads(line)
            if item.get("type") == "violation":
                found.append(Violation(item["rule"], None, item["detail"], item.get("request")))
        return Violations(found, "")

    def close(self) -> None:
        """Stop the server (its record is synced) and remove its scratch directory."""
        stop(self._process, timeout=10, terminate=True)
        self._scratch.cleanup()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(
    mock: Optional[Mock] = None,
    *,
    builtin: Optional[str] = None,
    name: str = "mock",
    time_scale: float = 0.0,
) -> Server:
    """Start ``ctxbed serve`` on a free loopback port for a mock model: a file, a dict holding
    the same document (served as the model ``name``), or a built-in one (``builtin=NAME``).

    ``time_scale`` multiplies the mock's scripted latencies (0, the default here, answers at
    once). Use it as ``with ctxbed.serve({"window": 8000, "turns": [{"reply": "hi"}]}) as
    server: ...``; a mistake in the mock is a ``RuntimeError`` with the binary's diagnostics.
    """
    return Server(mock, builtin=builtin, name=name, time_scale=time_scale)


def read_record(path: Path) -> List[Any]:
    """The records of a ``--record`` file, one dict per line. A last line that is not JSON (a
    server killed while writing it leaves it torn) is skipped with a warning naming the file and
    line; a line that is not JSON before the last raises ``json.JSONDecodeError``."""
    if not path.exists():
        return []
    with path.open(encoding="utf-8", errors="replace") as lines:
        numbered = [(number, line) for number, line in enumerate(lines, 1) if line.strip()]
    records = []
    for index, (number, line) in enumerate(numbered):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if index < len(numbered) - 1:
                raise
            warnings.warn(f"{path}:{number}: the last line is torn; skipped", stacklevel=2)
    return records
