"""``ctxbed.serve``: a mock model on loopback, as the provider it imitates."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any, List, Optional, Union

from ._binary import binary, stop

LISTENING = "listening on http://"


class Server:
    """A running ``ctxbed serve``. Use it as a context manager (:func:`serve` returns one)."""

    def __init__(
        self,
        mock: Union[str, Path, None] = None,
        *,
        builtin: Optional[str] = None,
        time_scale: float = 0.0,
        extra_args: Optional[List[str]] = None,
    ) -> None:
        if (mock is None) == (builtin is None):
            raise ValueError("give a mock-model file or builtin=NAME, not both or neither")
        self._scratch = tempfile.TemporaryDirectory(prefix="ctxbed-serve-")
        self.record_path = Path(self._scratch.name) / "requests.jsonl"
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
            raise RuntimeError(f"ctxbed serve did not start: {first}{stderr}".strip())
        self.address = first[len(LISTENING) :].strip()

    @property
    def openai_base_url(self) -> str:
        """The base URL for an OpenAI client (``…/chat/completions`` is appended)."""
        return f"http://{self.address}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The base URL for an Anthropic client (``/v1/messages`` is appended)."""
        return f"http://{self.address}"

    def requests(self) -> List[Any]:
        """Every exchange so far, as the canonical records ``--record`` writes (one dict each)."""
        if not self.record_path.exists():
            return []
        with self.record_path.open(encoding="utf-8") as lines:
            return [json.loads(line) for line in lines if line.strip()]

    def close(self) -> None:
        """Stop the server (its record is synced) and remove its scratch directory."""
        stop(self._process, timeout=10, terminate=True)
        self._scratch.cleanup()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(
    mock: Union[str, Path, None] = None,
    *,
    builtin: Optional[str] = None,
    time_scale: float = 0.0,
) -> Server:
    """Start ``ctxbed serve`` on a free loopback port for a mock-model file or a built-in one.

    ``time_scale`` multiplies the mock's scripted latencies (0, the default here, answers at
    once). Use it as ``with ctxbed.serve(builtin="wire-window-8k-english") as server: ...``.
    """
    return Server(mock, builtin=builtin, time_scale=time_scale)
