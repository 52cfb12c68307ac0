"""Runs one native Python check, or one regex over a file, inside the read-only check sandbox.

Protocol: a JSON request on stdin (``job``: ``native`` with ``module``, ``function``, ``state``; or
``file_text`` with ``file``, ``pattern``); one JSON reply on the original stdout (``{"ok": true, "value"}`` or
``{"ok": false, "stage", "error"}``), carrying the request's nonce and ``tampering`` records for exceptions
the agent's leftovers provoke (permission denied, a link loop, a special file, memory exhausted). The process
makes itself non-dumpable (``PR_SET_DUMPABLE`` 0) before any check code runs. Standard library only; run as a
script by the sandbox's interpreter, never imported by toolemu.
"""

from __future__ import annotations

import ctypes
import errno
import importlib.util
import json
import os
import re
import resource
import stat
import sys
import traceback
from typing import Any, TextIO

_PR_SET_DUMPABLE = 4
_MAX_READ = 64 * 1024 * 1024
_TAMPER_ERRNOS = {errno.EACCES: "permission", errno.EPERM: "permission", errno.ELOOP: "link_loop",
                  errno.ENXIO: "special_file", errno.ENODEV: "special_file"}


def _undumpable() -> None:
    """``prctl(PR_SET_DUMPABLE, 0)``: ``/proc/<pid>/mem``, ``fd`` and ptrace closed to same-uid processes."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _tampering(error: BaseException) -> list[dict[str, str]]:
    """One tampering record when the agent's leftovers can provoke ``error``; none otherwise."""
    if isinstance(error, OSError) and error.errno in _TAMPER_ERRNOS:
        return [{"kind": _TAMPER_ERRNOS[error.errno], "path": str(error.filename or ""),
                 "found": f"{type(error).__name__}: {error}"[:500]}]
    if isinstance(error, MemoryError):
        return [{"kind": "oversize", "path": "", "found": "MemoryError (a read without end?)"}]
    return []


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
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.ENXIO, "not a regular file", path)
            text = f.read(_MAX_READ).decode("utf-8", errors="replace")
    except OSError as e:
        _reply(out, nonce, {"ok": False, "stage": "call", "error": f"cannot read {path}: {e}",
                            "tampering": _tampering(e)})
        return 0
    hit = re.search(str(request["pattern"]), text) is not None
    shown = "matches" if hit else "does not match"
    _reply(out, nonce, {"ok": True, "value": hit, "detail": f"{path} {shown} /{request['pattern']}/"})
    return 0


def main() -> int:
    """Reads the request, runs the job, replies; returns the process exit code."""
    _undumpable()
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
    except BaseException as e:
        _reply(out, nonce, {"ok": False, "stage": "import", "error": traceback.format_exc(limit=8),
                            "tampering": _tampering(e)})
        return 0
    try:
        value = fn(FinalStateView(request.get("state") or {}))
    except BaseException as e:
        _reply(out, nonce, {"ok": False, "stage": "call", "error": traceback.format_exc(limit=8),
                            "tampering": _tampering(e)})
        return 0
    if not isinstance(value, bool):
        error = f"{request['function']}() returned {type(value).__name__} {value!r:.80}, expected bool"
        _reply(out, nonce, {"ok": False, "stage": "result", "error": error})
        return 0
    _reply(out, nonce, {"ok": True, "value": value})
    return 0


if __name__ == "__main__":
    sys.exit(main())
