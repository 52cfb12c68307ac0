"""Atomic file writes for the response cache and LLM fixtures (private to ``toolemu.llm``)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` so readers see the old file or the new one, never a partial write.

    The text goes to a temporary file in the same folder, is flushed to disk, then renamed over ``path``
    with ``os.replace`` (atomic on POSIX and Windows).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
