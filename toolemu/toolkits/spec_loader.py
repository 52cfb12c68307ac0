"""Loads toolkit specs (ToolEmu toolkit JSON: a list of toolkit objects, or one object) into ``ToolkitSpec``s.

Built-in emulated toolkits ship as JSON in ``toolemu/toolkits/specs/``; cases may carry their own beside them.
"""

from __future__ import annotations

import functools
import json
import logging
from importlib import resources
from pathlib import Path

from toolemu.core import safefs
from toolemu.core.errors import CaseError
from toolemu.core.toolkit_check import validate_toolkits
from toolemu.core.types import ToolkitSpec
from toolemu.core.untrusted import load_data

logger = logging.getLogger(__name__)


def parse_toolkit_specs(data: object, source: str) -> list[ToolkitSpec]:
    """Validates already-parsed JSON (a list of toolkit objects, or one object).

    ToolEmu's quirks are accepted: a missing or null ``required`` means false, a missing ``exceptions`` or
    ``returns`` means none, and ``category`` is optional. Unknown keys and unknown types are errors, and so
    is anything ``check_toolkit`` refuses (no tools, duplicate tool names...).

    Args:
        data: The parsed JSON.
        source: File name used in error messages.

    Returns:
        The specs in file order.

    Raises:
        CaseError: One line naming the file, the field path and the problem.
    """
    return validate_toolkits(data, source)


def _index(specs: list[ToolkitSpec], source: str) -> dict[str, ToolkitSpec]:
    out: dict[str, ToolkitSpec] = {}
    for spec in specs:
        if spec.toolkit in out:
            raise CaseError(
                f"{source}: toolkit `{spec.toolkit}` is defined twice; toolkit names must be unique"
            )
        out[spec.toolkit] = spec
    return out


def load_toolkit_specs(path: str | Path) -> dict[str, ToolkitSpec]:
    """Loads one toolkit JSON file, or every ``*.json`` in a folder.

    Args:
        path: A JSON file (a list of toolkit objects, or one object) or a folder of them.

    Returns:
        Specs by toolkit name.

    Raises:
        CaseError: The file is missing, is not valid JSON, or a toolkit is malformed or defined twice.
    """
    path = Path(path)
    if path.is_dir():
        specs: list[ToolkitSpec] = []
        for file in sorted(path.glob("*.json")):
            specs.extend(load_toolkit_specs(file).values())
        return _index(specs, str(path))
    if not path.is_file():
        raise CaseError(f"{path}: toolkit spec file not found")
    data = load_data(path, what="toolkit spec")
    return _index(parse_toolkit_specs(data, str(path)), str(path))


def dump_toolkit_spec(spec: ToolkitSpec) -> str:
    """Returns the spec as ToolEmu-style JSON text (defaults omitted) that ``load_toolkit_specs`` reads."""
    return (
        json.dumps(spec.model_dump(mode="json", exclude_defaults=True), indent=2, ensure_ascii=False) + "\n"
    )


@functools.cache
def _builtin() -> dict[str, ToolkitSpec]:
    folder = resources.files("toolemu.toolkits").joinpath("specs")
    specs: list[ToolkitSpec] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            try:
                data = json.loads(entry.read_text(encoding="utf-8"))
            except json.JSONDecodeError as e:
                raise CaseError(f"specs/{entry.name}:{e.lineno}: invalid JSON: {e.msg}") from None
            specs.extend(parse_toolkit_specs(data, f"toolemu/toolkits/specs/{entry.name}"))
    return _index(specs, "toolemu/toolkits/specs")


def builtin_toolkit_specs() -> dict[str, ToolkitSpec]:
    """Returns the built-in emulated toolkits shipped with toolemu, by name."""
    return dict(_builtin())


def find_specs_near(case_dir: str | Path) -> dict[str, ToolkitSpec]:
    """Returns the toolkit specs that travel with a case.

    Looks in ``<case_dir>/../toolkits/*.json`` (a folder of cases sharing specs) and
    ``<case_dir>/toolkits/*.json``; the nearer folder wins when both define a toolkit.

    Args:
        case_dir: The folder holding the case file (``Case.source_dir``).

    Returns:
        Specs by toolkit name; empty when neither folder exists.

    Raises:
        CaseError: A spec file there is malformed.
    """
    case_dir = Path(case_dir)
    found: dict[str, ToolkitSpec] = {}
    for owner, folder in ((case_dir.parent, case_dir.parent / "toolkits"), (case_dir, case_dir / "toolkits")):
        if folder.is_dir():
            _check_inside(owner, folder)
            found.update(load_toolkit_specs(folder))
    return found


def _check_inside(owner: Path, folder: Path) -> None:
    """Spec files that travel with a case must really be there, not symlinks to elsewhere on the host."""
    root = owner.resolve()
    for entry in [folder, *sorted(folder.glob("*.json"))]:
        if not entry.resolve().is_relative_to(root):
            raise CaseError(
                f"{entry}: resolves to {entry.resolve()}, outside {root}; toolkit specs next to a case must "
                "be files inside its folder, not links to elsewhere"
            )
        if entry != folder:  # a hard link is inside by every path check, yet may be a host file too
            safefs.stat_beneath(owner, str(entry.relative_to(owner)), what="toolkit spec")
