"""Where toolemu keeps per-user files (assembled models, built wheels, build probes). Part of ``toolemu.llm``."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def user_cache_dir(sub: str) -> Path:
    """Returns the folder ``sub`` of toolemu's per-user cache (not created).

    ``$TOOLEMU_CACHE_DIR/<sub>`` when that variable is set, else the platform's user cache folder
    (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%``
    on Windows) + ``toolemu/<sub>``.

    Examples:
        >>> user_cache_dir("models").name
        'models'
    """
    root = os.environ.get("TOOLEMU_CACHE_DIR")
    if root:
        return Path(root).expanduser() / sub
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "toolemu" / sub
