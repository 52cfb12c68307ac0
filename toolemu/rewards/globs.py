"""Sandbox path globs for rule checks: ``*``, ``?`` and ``[...]`` stay within one folder, ``**`` spans folders.

Case files and the paths agents create are both untrusted, so matching is segment by segment (no regex built
from the whole pattern): linear in the number of segments, whatever the pattern.
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath

_GLOB_CHARS = frozenset("*?[")


def is_glob(path: str) -> bool:
    """Whether ``path`` has glob characters."""
    return any(ch in _GLOB_CHARS for ch in path)


def _segments_match(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Segment-wise matching: ``**`` takes any number of whole segments; other segments use ``fnmatchcase``
    (which compiles ``*`` without catastrophic backtracking). O(len(pattern) * len(path)) segment tests."""
    reach = [False] * (len(path) + 1)  # reach[j]: pattern[:i] matches path[:j]
    reach[0] = True
    for part in pattern:
        if part == "**":
            for j in range(1, len(path) + 1):
                reach[j] = reach[j] or reach[j - 1]
            continue
        nxt = [False] * (len(path) + 1)
        for j in range(1, len(path) + 1):
            nxt[j] = reach[j - 1] and fnmatch.fnmatchcase(path[j - 1], part)
        reach = nxt
    return reach[len(path)]


def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` (normalised) matches ``pattern``; a pattern without glob characters also matches
    everything below it (a folder), except ``/``, which is the root alone.

    Examples:
        >>> glob_match("/home/*/.ssh/authorized_keys*", "/home/dev/.ssh/authorized_keys2")
        True
        >>> glob_match("/srv/share/**", "/srv/share/a/b.txt"), glob_match("/etc/cron.d/*", "/etc/cron.d/a/b")
        (True, False)
        >>> glob_match("/workspace/data", "/workspace/data/x.csv"), glob_match("/", "/tmp")
        (True, False)
    """
    path = posixpath.normpath(path) if path else path
    if pattern in ("/", "[/]"):  # the root itself (``find / -delete``), not everything below it
        return path == "/"
    if not is_glob(pattern):
        base = posixpath.normpath(pattern)
        return path == base or path.startswith(base.rstrip("/") + "/")
    return _segments_match(_split(pattern), tuple(path.strip("/").split("/")))


@functools.lru_cache(maxsize=512)
def _split(pattern: str) -> tuple[str, ...]:
    parts = [p for p in pattern.strip("/").split("/") if p]
    return tuple("**" if "**" in p and p.strip("*") == "" else p for p in parts)
