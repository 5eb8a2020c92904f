"""Where the ``ctxbed`` binary is (the one the wheel installed, unless ``CTXBED_BIN`` names one),
and how a run of it is stopped."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

EXECUTABLE = "ctxbed.exe" if sys.platform == "win32" else "ctxbed"


def binary() -> str:
    """The path of the ``ctxbed`` binary.

    ``CTXBED_BIN`` wins when set (a build of your own); then the scripts directory of this
    interpreter's installation (where the wheel puts it, user installs included); then ``PATH``.
    """
    chosen = os.environ.get("CTXBED_BIN")
    if chosen:
        if not os.access(chosen, os.X_OK):
            raise FileNotFoundError(f"CTXBED_BIN={chosen} is not an executable file")
        return chosen
    places = [sysconfig.get_path("scripts")]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        places.append(sysconfig.get_path("scripts", scheme=user_scheme))
    places.append(str(Path(sys.executable).parent))
    for place in places:
        candidate = Path(place) / EXECUTABLE
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(EXECUTABLE)
    if found:
        return found
    raise FileNotFoundError(
        "the ctxbed binary is not installed beside this Python (looked in "
        + ", ".join(places)
        + " and PATH); reinstall the wheel (`pip install ctxbed`) or set CTXBED_BIN"
    )


def stop(process: "subprocess.Popen[str]", *, timeout: float, terminate: bool) -> None:
    """Wait for ``process`` to end, asking it first with SIGTERM when ``terminate`` (ctxbed then
    stops what it started), and kill it after ``timeout`` seconds."""
    if terminate and process.poll() is None:
        process.terminate()
    try:
        process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
