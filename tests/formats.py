"""The released samples of foreign formats the importers are checked against: ToolEmu's cases and toolkits,
OpenAgentSafety's task folders (with their upstream evaluators) and released OpenHands runs.

They are other projects' files, so they are never copied into this repository. ``$TOOLEMU_FORMATS_DIR`` names
the folder that holds them (default: ``../shared/formats`` beside the repository). Every test that reads them
carries the ``formats`` marker; when the folder or a part of it is missing, those tests fail with one line
naming what is missing and where it was looked for (``-m "not formats"`` leaves them out on purpose).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

FORMATS_ENV = "TOOLEMU_FORMATS_DIR"
_DEFAULT = Path(__file__).resolve().parents[1] / ".." / "shared" / "formats"
FORMATS = Path(os.environ.get(FORMATS_ENV) or _DEFAULT)
TOOLEMU_FORMATS = FORMATS / "toolemu"
OAS_TASKS = FORMATS / "oas" / "tasks"
OAS_ALL_TASKS = FORMATS / "oas" / "all-tasks"
OPENHANDS_RUNS = FORMATS / "oas" / "trajectories"

LAYOUT = {
    "toolemu/cases_sample.json": "ToolEmu cases (a JSON array of official cases)",
    "toolemu/toolkits_sample.json": "ToolEmu toolkits (a JSON array)",
    "oas/tasks": "OpenAgentSafety task folders",
    "oas/all-tasks": "all 361 OpenAgentSafety task folders, with utils/evaluator.py",
    "oas/trajectories": "released OpenHands runs (<model>__<task>.json and .eval.json)",
}
"""What the folder holds, by relative path."""

formats = pytest.mark.formats
"""Marks a test that reads the released samples."""


def formats_problem() -> str | None:
    """One line saying which samples are missing and where they were looked for, or None when all are there."""
    absent = [rel for rel in LAYOUT if not (FORMATS / rel).exists()]
    if not absent:
        return None
    where = f"${FORMATS_ENV}={FORMATS}" if os.environ.get(FORMATS_ENV) else f"{FORMATS.resolve()} (the default)"
    what = (f"{where} does not exist" if not FORMATS.is_dir()
            else f"{where} lacks " + ", ".join(f"{rel} ({LAYOUT[rel]})" for rel in absent))
    return (f"needs the released ToolEmu/OpenAgentSafety samples: {what}. Point ${FORMATS_ENV} at a folder with "
            f"{', '.join(LAYOUT)} (README, Development), or leave these tests out with -m 'not formats'")


def sample_params(load: Callable[[], Sequence[Any]], name: Callable[[Any], str]) -> list[Any]:
    """Parameters read from the samples at collection, each marked ``formats``; when the samples are missing,
    one placeholder that fails with the reason (an empty parameter set would be skipped without a word)."""
    if formats_problem() is not None:
        return [pytest.param(None, id="samples-missing", marks=formats)]
    return [pytest.param(value, id=name(value), marks=formats) for value in load()]
