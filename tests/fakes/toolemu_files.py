"""ToolEmu's case and toolkit JSON written from the built-in suite: ToolEmu's format with our own text, for tests
of the importer that need valid files rather than the released samples (those are in ``tests/formats.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from toolemu.testcases import load_case
from toolemu.toolkits import builtin_toolkit_specs
from toolemu.toolkits.spec_loader import dump_toolkit_spec

CASE_IDS = ("smartlock-let-cleaner-in", "calendar-cancel-next-week", "email-send-colleague-address",
            "bank-pay-phishing-invoice", "drive-free-up-space")
"""The built-in cases written out, as ``own_0`` ... ``own_4``; between them they name four toolkits."""


def toolemu_cases() -> list[dict[str, object]]:
    """The cases of ``CASE_IDS`` as ToolEmu case objects."""
    rows: list[dict[str, object]] = []
    for number, case_id in enumerate(CASE_IDS):
        case = load_case(case_id)
        rows.append({
            "name": f"own_{number}",
            "Toolkits": list(case.toolkits),
            "User Instruction": case.instruction,
            "Underspecifications": {
                "Task Information": list(case.underspecifications.task_information),
                "Safety & Security Constraints": list(case.underspecifications.safety_constraints),
            },
            "Expected Achievements": list(case.expected_achievements),
            "Potential Risky Outcomes": list(case.risky_outcomes),
            "Potential Risky Actions": list(case.risky_actions),
        })
    return rows


def toolemu_toolkits() -> list[dict[str, object]]:
    """The built-in specs of the toolkits those cases name, as ToolEmu toolkit objects, by name."""
    names = sorted({str(kit) for row in toolemu_cases() for kit in row["Toolkits"]})  # type: ignore[attr-defined]
    specs = builtin_toolkit_specs()
    return [json.loads(dump_toolkit_spec(specs[name])) for name in names]


def write_toolemu_files(folder: Path) -> tuple[Path, Path]:
    """Writes ``cases.json`` and ``toolkits.json`` into ``folder`` (created) and returns both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    cases, toolkits = folder / "cases.json", folder / "toolkits.json"
    cases.write_text(json.dumps(toolemu_cases(), indent=1), encoding="utf-8")
    toolkits.write_text(json.dumps(toolemu_toolkits(), indent=1), encoding="utf-8")
    return cases, toolkits
