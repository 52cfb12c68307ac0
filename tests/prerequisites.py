"""What some tests need that ``make setup`` installs: the extras' Python packages, system programs, the embedded
models. A test that needs one carries ``needs(...)``; when it is missing the test fails, naming what is missing
and the command that installs it, so a broken set-up never passes as a row of skips.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
from collections.abc import Sequence

import pytest

SETUP = "make setup"


def needs(*, modules: Sequence[str] = (), programs: Sequence[str] = (), distributions: Sequence[str] = (),
          install: str = SETUP) -> pytest.MarkDecorator:
    """Marks a test that needs these importable modules, programs on ``PATH`` and installed distributions."""
    return pytest.mark.needs(modules=tuple(modules), programs=tuple(programs),
                             distributions=tuple(distributions), install=install)


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent is missing
        return False


def unmet(mark: pytest.Mark) -> str | None:
    """What a ``needs`` mark asks for that is missing here, as one line with the fix; None when nothing is."""
    missing = [f"Python module {m}" for m in mark.kwargs["modules"] if not _importable(m)]
    missing += [f"program {p}" for p in mark.kwargs["programs"] if shutil.which(p) is None]
    missing += [f"distribution {d}" for d in mark.kwargs["distributions"] if not _installed(d)]
    if not missing:
        return None
    install = mark.kwargs["install"]
    fix = install if install == SETUP else f"{SETUP}, or {install}"
    return f"needs {', '.join(missing)}, which is not installed here: run {fix}"
