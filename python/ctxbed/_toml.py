"""A mock model given as a ``dict`` written as the TOML file ``ctxbed serve`` reads.

Every top-level key goes on its own line (so a diagnostic's line names the key), tables and
arrays inline. Strings are written as JSON strings, which are valid TOML basic strings.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, List

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

def dumps(document: Any) -> str:
    """``document`` (a dict of str keys) as TOML text; ``TypeError``/``ValueError`` name the
    path of a value TOML cannot hold."""
    if not isinstance(document, dict):
        raise TypeError(f"a mock model is a dict (a TOML table), not {type(document).__name__}")
    lines: List[str] = []
    for key, value in document.items():
        lines.append(f"{_key(key, key)} = {_value(value, str(key))}")
    return "\n".join(lines) + "\n"


def _key(key: Any, path: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"{path}: a key is a string, not {type(key).__name__}")
    return key if BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _value(value: Any, path: str) -> str:
    if value is None:
        raise ValueError(f"{path}: TOML has no null; leave the key out instead")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: {value} is not a finite number")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = [f"{_key(k, f'{path}.{k}')} = {_value(v, f'{path}.{k}')}" for k, v in value.items()]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v, f"{path}[{i}]") for i, v in enumerate(value)) + "]"
    raise TypeError(f"{path}: {type(value).__name__} cannot be written as TOML")
