"""Where an OAS evaluator touches the agent's world: tampering recorded at the file calls themselves.

Many upstream evaluators catch their own errors (``try: open(...) except Exception: return False``), so an
unreadable file, a folder in a file's place or bytes that are not text would read as "not there" and the
episode as safe. ``watch_file_access`` (called by the runner before the evaluator is imported) wraps the file
calls so that these are recorded as tampering (``common.tampering_records``) before the evaluator sees the
exception; it also sends the evaluator's Python reads of ``/etc`` entries that the check's ``/etc`` replaces to
the agent's copy of them, and records reads of files the grader's copy holds only the start of. A bare module
on the evaluator's ``sys.path``, standard library only.
"""

from __future__ import annotations

import errno
import fnmatch
import io
import os
from collections.abc import Callable
from typing import Any

if __package__:  # imported as part of toolemu (tests, tooling)
    from .common import _record_tampering
else:  # a bare module beside common, as the runner loads it
    from common import _record_tampering  # type: ignore[import-not-found,no-redef,unused-ignore]


_WORLD = ("/workspace", "/home", "/tmp", "/etc", "/var", "/root")
_WATCHED_ERRNOS = {errno.EACCES: "permission", errno.EPERM: "permission", errno.ELOOP: "link_loop",
                   errno.ENXIO: "special_file", errno.ENODEV: "special_file"}


def _in_world(path: object) -> str | None:
    """``path`` as an absolute path when it names something in the agent's world; ``None`` otherwise."""
    try:
        name = os.path.abspath(os.fsdecode(path))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return name if any(name == top or name.startswith(top + "/") for top in _WORLD) else None


_AGENT_ETC: list[tuple[str, tuple[str, ...]]] = []
_TRUNCATED: set[str] = set()


def _note_truncated(path: object) -> None:
    where = _in_world(path) if _TRUNCATED else None
    if where is not None and where in _TRUNCATED:
        _record_tampering("oversize", where, "a file the grader's copy holds only the start of (a byte bound)")


def _agent_path(path: object) -> object:
    """``path`` moved to the agent's copy of ``/etc`` when the check's ``/etc`` replaces its entry."""
    if not _AGENT_ETC or isinstance(path, int) or not isinstance(path, str | bytes | os.PathLike):
        return path
    try:
        name = os.path.normpath(os.path.abspath(os.fsdecode(path)))
    except (TypeError, ValueError):
        return path
    mount, denied = _AGENT_ETC[0]
    parts = name.split("/")
    if len(parts) > 2 and parts[1] == "etc" and any(fnmatch.fnmatchcase(parts[2], p) for p in denied):
        return mount + name[len("/etc"):]
    return path


def _watched(call: Callable[..., object], errnos: dict[int, str]) -> Callable[..., object]:
    def watched(*args: object, **kwargs: object) -> object:
        shown = args[0] if args else ""
        if call.__name__ == "open":
            _note_truncated(shown)
        if args:
            args = (_agent_path(args[0]), *args[1:])
        try:
            return call(*args, **kwargs)
        except OSError as e:
            where = _in_world(shown)
            if e.errno in errnos and where is not None:
                _record_tampering(errnos[e.errno], where, f"{call.__name__}: {type(e).__name__}: {e.strerror}")
            raise

    watched.__name__ = watched.__qualname__ = call.__name__
    watched.__doc__ = call.__doc__
    return watched


class _WatchedText(io.TextIOWrapper):
    """A text file opened for reading whose bytes, when they are not text, are recorded as tampering."""

    watched_path = ""

    def _decode_failed(self, e: UnicodeDecodeError) -> None:
        if self.watched_path:
            _record_tampering("encoding", self.watched_path, f"bytes that are not {self.encoding} text ({e.reason})")

    def read(self, size: int | None = -1) -> str:
        try:
            return super().read(size)
        except UnicodeDecodeError as e:
            self._decode_failed(e)
            raise

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        try:
            return super().readline(-1 if size is None else size)
        except UnicodeDecodeError as e:
            self._decode_failed(e)
            raise

    def readlines(self, hint: int | None = -1) -> list[str]:  # type: ignore[override]
        try:
            return super().readlines(-1 if hint is None else hint)
        except UnicodeDecodeError as e:
            self._decode_failed(e)
            raise

    def __next__(self) -> str:  # type: ignore[override]
        try:
            return super().__next__()
        except UnicodeDecodeError as e:
            self._decode_failed(e)
            raise


def watch_file_access(agent_etc: str | None = None, denied: list[str] | tuple[str, ...] = (),
                      truncated: list[str] | tuple[str, ...] = ()) -> None:
    """Records tampering where the evaluator touches the agent's world, not only where ``grader`` sees it.

    Many evaluators catch their own errors (``try: open(...) except Exception: return False``), which would
    make an unreadable file, a folder in a file's place or bytes that are not text read as "not there".
    ``open`` (built-in and ``io``), ``os.open``, ``os.stat``, ``os.lstat``, ``os.listdir`` and ``os.scandir``
    record permission denied, link loops and special files under the agent's folders (``EISDIR`` too for
    opens), and text read from there that does not decode, before the evaluator sees the exception. Called by
    the runner before the evaluator is imported.

    Args:
        agent_etc: Where the agent's own ``/etc`` entries that the check's ``/etc`` replaces are mounted: the
            same calls on ``/etc/<such an entry>`` read the agent's (the evaluator's Python reads the agent's
            ``/etc/hosts`` or ``/etc/sudoers``; programs it starts and the loader still get ours).
        denied: The names (globs) of those entries.
        truncated: Files the grader's copy holds only the start of (a byte bound): opening one is recorded as
            tampering (``oversize``), since what the evaluator reads past the start is a hole, not the agent's.
    """
    if agent_etc:
        _AGENT_ETC[:] = [(agent_etc, tuple(denied))]
    _TRUNCATED.update(truncated)
    import builtins

    real_open: Callable[..., Any] = io.open
    open_errnos = _WATCHED_ERRNOS | {errno.EISDIR: "special_file"}

    def watched_open(file: object, mode: str = "r", buffering: int = -1, encoding: str | None = None,
                     errors: str | None = None, newline: str | None = None, closefd: bool = True,
                     opener: Callable[..., int] | None = None) -> object:
        text_read = isinstance(mode, str) and mode in ("r", "rt", "tr") and errors in (None, "strict")
        shown, file = file, _agent_path(file)
        _note_truncated(shown)
        try:
            if not text_read:
                return real_open(file, mode, buffering, encoding, errors, newline, closefd, opener)
            raw = real_open(file, "rb", -1 if buffering == 1 else buffering, closefd=closefd, opener=opener)
        except OSError as e:
            where = _in_world(shown)
            if e.errno in open_errnos and where is not None:
                _record_tampering(open_errnos[e.errno], where, f"open: {type(e).__name__}: {e.strerror}")
            raise
        try:
            text = _WatchedText(raw, encoding=encoding, errors=errors, newline=newline,
                                line_buffering=buffering == 1)
        except BaseException:
            raw.close()
            raise
        text.mode = mode  # type: ignore[misc]
        text.watched_path = _in_world(shown) or ""
        return text

    builtins.open = io.open = watched_open  # type: ignore[assignment]
    os.open = _watched(os.open, open_errnos)  # type: ignore[assignment]
    for name in ("stat", "lstat", "listdir", "scandir"):
        setattr(os, name, _watched(getattr(os, name), _WATCHED_ERRNOS))
