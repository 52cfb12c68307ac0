"""Runs one native Python check, or one regex over a file, inside the read-only check sandbox.

Protocol: a JSON request on stdin (``job``: ``native`` with ``module``, ``function``, ``state``; or
``file_text`` with ``file``, ``pattern``); one JSON reply on the original stdout (``{"ok": true, "value"}`` or
``{"ok": false, "stage", "error"}``), carrying the request's nonce. Standard library only; run as a script by
the sandbox's interpreter, never imported by toolemu.
"""

from __future__ import annotations

import importlib.util
import json
import re
import resource
import sys
import traceback
from typing import Any, TextIO


class Record:
    """One snapshot record (file, command or message) with the same attributes as toolemu's."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"snapshot record has no attribute {name!r} (it has {sorted(self.__dict__)})")

    def __repr__(self) -> str:
        return f"Record({self.__dict__!r})"


class FinalStateView:
    """The final-state snapshot as a native check sees it: ``files``, ``initial_files``, ``commands``,
    ``messages`` and the ``file(path)`` / ``initial_file(path)`` lookups of ``toolemu.core.FinalState``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.files = tuple(Record(f) for f in data.get("files", ()))
        self.initial_files = tuple(Record(f) for f in data.get("initial_files", ()))
        self.commands = tuple(Record(c) for c in data.get("commands", ()))
        self.messages = tuple(Record(m) for m in data.get("messages", ()))

    def file(self, path: str) -> Record | None:
        """Returns the final record for ``path`` or ``None``."""
        return next((f for f in self.files if f.path == path), None)

    def initial_file(self, path: str) -> Record | None:
        """Returns the initial record for ``path`` or ``None``."""
        return next((f for f in self.initial_files if f.path == path), None)


def _reply(out: TextIO, nonce: str, payload: dict[str, object]) -> None:
    out.write(json.dumps({**payload, "nonce": nonce}))
    out.flush()


def _file_text(out: TextIO, nonce: str, request: dict[str, Any]) -> int:
    path = str(request["file"])
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    except OSError as e:
        _reply(out, nonce, {"ok": False, "stage": "call", "error": f"cannot read {path}: {e}"})
        return 0
    hit = re.search(str(request["pattern"]), text) is not None
    shown = "matches" if hit else "does not match"
    _reply(out, nonce, {"ok": True, "value": hit, "detail": f"{path} {shown} /{request['pattern']}/"})
    return 0


def main() -> int:
    """Reads the request, runs the job, replies; returns the process exit code."""
    out = sys.stdout
    sys.stdout = sys.stderr
    request = json.load(sys.stdin)
    nonce = str(request.pop("nonce", ""))
    memory = int(request.get("memory_mb", 2048)) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(request.get("cpu_seconds", 60))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    if request.get("job") == "file_text":
        return _file_text(out, nonce, request)
    sys.path[:0] = [str(p) for p in request.get("path", [])]
    try:
        spec = importlib.util.spec_from_file_location("toolemu_case_check", request["module"])
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {request['module']}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn = getattr(module, request["function"], None)
        if not callable(fn):
            raise AttributeError(f"{request['module']} defines no function `{request['function']}`")
    except BaseException:
        _reply(out, nonce, {"ok": False, "stage": "import", "error": traceback.format_exc(limit=8)})
        return 0
    try:
        value = fn(FinalStateView(request.get("state") or {}))
    except BaseException:
        _reply(out, nonce, {"ok": False, "stage": "call", "error": traceback.format_exc(limit=8)})
        return 0
    if not isinstance(value, bool):
        error = f"{request['function']}() returned {type(value).__name__} {value!r:.80}, expected bool"
        _reply(out, nonce, {"ok": False, "stage": "result", "error": error})
        return 0
    _reply(out, nonce, {"ok": True, "value": value})
    return 0


if __name__ == "__main__":
    sys.exit(main())
