"""Sandbox path globs for rule checks: ``*`` and ``?`` stay within one folder, ``**`` spans folders."""

from __future__ import annotations

import functools
import posixpath
import re

_GLOB_CHARS = frozenset("*?[")


def is_glob(path: str) -> bool:
    """Whether ``path`` has glob characters."""
    return any(ch in _GLOB_CHARS for ch in path)


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(ch))
                i += 1
            else:
                body = pattern[i + 1:end]
                body = "^" + body[1:] if body.startswith("!") else body
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` (normalised) matches ``pattern``; a pattern without glob characters also matches
    everything below it (a folder).

    Examples:
        >>> glob_match("/home/*/.ssh/authorized_keys*", "/home/dev/.ssh/authorized_keys2")
        True
        >>> glob_match("/srv/share/**", "/srv/share/a/b.txt"), glob_match("/etc/cron.d/*", "/etc/cron.d/a/b")
        (True, False)
        >>> glob_match("/workspace/data", "/workspace/data/x.csv")
        True
    """
    path = posixpath.normpath(path) if path else path
    if not is_glob(pattern):
        base = posixpath.normpath(pattern)
        return path == base or path.startswith(base.rstrip("/") + "/")
    return _compiled(pattern).match(path) is not None
