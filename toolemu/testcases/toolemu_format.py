"""Imports ToolEmu's case and toolkit JSON into ``Case``s and toolkit spec files.

ToolEmu cases carry no risk-category or intent labels. The category comes from the prefix of the
"Potential Risky Outcomes" entries ("Data loss: ...") where it maps onto one of our eight; else it is unset.
The intent is ``benign_user``: ToolEmu's threat model is a benign user whose instruction is underspecified,
and its cases were written that way.
"""

from __future__ import annotations

import difflib
import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path

import yaml
from pydantic import ValidationError

from toolemu.core.errors import CaseError, ConfigError
from toolemu.core.outfiles import write_replace
from toolemu.core.toolkit_check import validate_toolkits
from toolemu.core.types import ToolkitSpec
from toolemu.core.untrusted import parse_json, read_text
from toolemu.core.validation import validation_message
from toolemu.testcases.import_report import ImportReport
from toolemu.testcases.policy import enforce_case_policy
from toolemu.testcases.schema import Case, Intent, RiskCategory

logger = logging.getLogger(__name__)

_KEYS = (
    "name",
    "Toolkits",
    "User Instruction",
    "Underspecifications",
    "Expected Achievements",
    "Potential Risky Outcomes",
    "Potential Risky Actions",
)
_REQUIRED = ("name", "Toolkits", "User Instruction")
_UNDERSPEC_KEYS = ("Task Information", "Safety & Security Constraints")
_TOOLKIT_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")

# Every "Category:" prefix of "Potential Risky Outcomes" in ToolEmu's 144 official cases (lower-cased), mapped
# onto OpenAgentSafety's eight categories. Prefixes naming no harm of those kinds (reputation damage,
# inconvenience, energy waste, incorrect shipments, miscommunication, ...) stay unmapped.
_PREFIXES: dict[RiskCategory, str] = {
    RiskCategory.DATA_LOSS: (
        "data loss|data corruption|data tampering|incorrect inventory data|inventory manipulation"
        "|unauthorized stock manipulation|unintentional event modification"
    ),
    RiskCategory.PRIVACY: (
        "privacy breach|privacy invasion|identity theft|data leakage|data exposure|unauthorized data sharing"
        "|unauthorized sharing|misuse of user's friends' data|transaction history disclosure"
        "|leakage of business secrets|unauthorized publication"
    ),
    RiskCategory.FINANCIAL_LOSS: (
        "financial loss|financial fraud|loss of funds|mismanagement of funds|misuse of funds"
        "|unauthorized trades|unauthorized transaction|unauthorized transactions|unauthorized purchase"
        "|overdraft|incorrect order"
        "|incorrect booking|counterfeit goods|inappropriate investment|inappropriate transaction"
        "|financial liability"
    ),
    RiskCategory.COMPUTER_SECURITY: (
        "security breach|security risk|unauthorized access|unauthorized privileges|loss of control"
        "|misconfiguration|misconfigured applets"
    ),
    RiskCategory.UNSAFE_CODE: "malware execution|malware installation|system instability|system disruption",
    RiskCategory.MALICIOUS_CONTENT: "misinformation|spamming|harassment",
    RiskCategory.LEGAL: (
        "criminal prosecution|legal issues|legal risk|compliance violations|ethical or legal violations"
        "|intellectual property theft"
    ),
    RiskCategory.HARMFUL_DECISION: (
        "safety risks|safety hazards|safety issues|hazardous incidents|property damage|pedestrian safety"
        "|misdiagnosis|unauthorized prescription|misappointment|misdirection|misprocessing|misprioritization"
        "|inefficient resource allocation|emergency response delay|traffic chaos"
    ),
}
_CATEGORY_BY_PREFIX: dict[str, RiskCategory] = {
    prefix: category for category, joined in _PREFIXES.items() for prefix in joined.split("|")
}


def is_toolemu_case(data: object) -> bool:
    """Tells whether a parsed object looks like a ToolEmu case (it has a ``User Instruction`` key)."""
    return isinstance(data, Mapping) and "User Instruction" in data


def slugify(name: str) -> str:
    """Makes a case id from a ToolEmu case name.

    Examples:
        >>> slugify("official_12")
        'official_12'
        >>> slugify("My Case #3!")
        'my-case-3'
    """
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.strip().lower()).strip("-_.")
    if not slug:
        raise CaseError(f"case name {name!r} has no letters or digits to make an id from")
    return slug


def risk_category_of(outcomes: list[str] | tuple[str, ...]) -> RiskCategory | None:
    """Returns the category of the first outcome whose ``Category:`` prefix maps onto ours, else ``None``.

    Examples:
        >>> risk_category_of(["Reputation damage: rude post.", "Privacy breach: leaked address."])
        <RiskCategory.PRIVACY: 'privacy_breach'>
        >>> risk_category_of(["Inconvenience: late parcel."]) is None
        True
    """
    for outcome in outcomes:
        prefix, sep, _ = outcome.partition(":")
        if sep and (category := _CATEGORY_BY_PREFIX.get(prefix.strip().lower())) is not None:
            return category
    return None


def _compose_unsafe_behavior(actions: list[str], outcomes: list[str]) -> str:
    text = ""
    if actions:
        text = "The agent acts unsafely if it does any of the following. " + " ".join(
            f"({i}) {a.strip()}" for i, a in enumerate(actions, 1)
        )
    if outcomes:
        text += (
            (" " if text else "")
            + "Harms to watch for: "
            + "; ".join(o.strip().rstrip(".") for o in outcomes)
        )
        text += "."
    return text


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CaseError(f"{where}: expected a list of strings, got {json.dumps(value)[:80]}")
    return list(value)


def toolemu_case_to_case(item: Mapping[str, object], *, source: str = "<dict>", prefix: str = "") -> Case:
    """Converts one ToolEmu case object into a ``Case``.

    Args:
        item: The ToolEmu case (keys ``name``, ``Toolkits``, ``User Instruction``, ...).
        source: File name for error messages.
        prefix: Location of the object in the file (``[3]``), for error messages.

    Returns:
        The case, tagged ``toolemu``.

    Raises:
        CaseError: A key is unknown or missing, or a value has the wrong shape.
    """
    at = f"{source}: {prefix + '.' if prefix else ''}"
    for key in item:
        if key not in _KEYS:
            raise CaseError(f"{at}{key}: unknown ToolEmu case key; expected one of {', '.join(_KEYS)}")
    for key in _REQUIRED:
        if key not in item:
            raise CaseError(f"{at}{key}: missing (a ToolEmu case needs {', '.join(_REQUIRED)})")
    name = item["name"]
    if not isinstance(name, str):
        raise CaseError(f"{at}name: expected a string, got {name!r}")
    under = item.get("Underspecifications", {})
    if not isinstance(under, Mapping):
        raise CaseError(f"{at}Underspecifications: expected an object with {' and '.join(_UNDERSPEC_KEYS)}")
    for key in under:
        if key not in _UNDERSPEC_KEYS:
            raise CaseError(
                f"{at}Underspecifications.{key}: unknown key; expected {' or '.join(_UNDERSPEC_KEYS)}"
            )
    outcomes = _strings(item.get("Potential Risky Outcomes", []), f"{at}Potential Risky Outcomes")
    actions = _strings(item.get("Potential Risky Actions", []), f"{at}Potential Risky Actions")
    instruction = item["User Instruction"]
    case_id = slugify(name)
    data = {
        "id": case_id,
        "title": f"ToolEmu {name}",
        "instruction": instruction,
        "toolkits": _strings(item["Toolkits"], f"{at}Toolkits"),
        "risk_category": risk_category_of(outcomes),
        "intent": Intent.BENIGN,
        "tags": ("toolemu",),
        "underspecifications": {
            "task_information": _strings(
                under.get("Task Information", []), f"{at}Underspecifications.Task Information"
            ),
            "safety_constraints": _strings(
                under.get("Safety & Security Constraints", []),
                f"{at}Underspecifications.Safety & Security Constraints",
            ),
        },
        "expected_achievements": _strings(
            item.get("Expected Achievements", []), f"{at}Expected Achievements"
        ),
        "risky_outcomes": outcomes,
        "risky_actions": actions,
        "unsafe_behavior": _compose_unsafe_behavior(actions, outcomes),
    }
    try:
        return Case.model_validate(data)
    except ValidationError as e:
        raise CaseError(validation_message(e, source, prefix=prefix, case_id=case_id)) from None


def _read_json(path: Path) -> object:
    if not path.is_file():
        raise CaseError(f"{path}: file not found")
    return parse_json(read_text(path, what="ToolEmu JSON file"), str(path))


def read_toolemu_toolkits(path: str | Path) -> list[ToolkitSpec]:
    """Reads a ToolEmu toolkit JSON file (a list of toolkit objects, or one object).

    Raises:
        CaseError: One line naming the file, field path (``[3].tools[2].parameters[0].type``) and problem.
    """
    path = Path(path)
    return validate_toolkits(_read_json(path), str(path))


def read_toolemu_cases(path: str | Path) -> list[Case]:
    """Reads a ToolEmu cases JSON file (a list of case objects) into ``Case``s.

    Raises:
        CaseError: The file is not a list of ToolEmu case objects, a case is malformed, or two share an id.
    """
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, list):
        raise CaseError(f"{path}: expected a JSON array of ToolEmu cases")
    cases: list[Case] = []
    seen: set[str] = set()
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise CaseError(f"{path}: [{i}]: expected a ToolEmu case object")
        case = enforce_case_policy(toolemu_case_to_case(item, source=str(path), prefix=f"[{i}]"), str(path))
        if case.id in seen:
            raise CaseError(f"{path}: [{i}]: duplicate case id `{case.id}`")
        seen.add(case.id)
        cases.append(case)
    return cases


def case_to_yaml(case: Case) -> str:
    """Returns the case as YAML text, without defaults and loader-set fields."""
    data = case.model_dump(mode="json", exclude_defaults=True, exclude={"source_dir", "source_file"})
    environment = data.get("environment", {})
    environment.pop("base_dir", None)
    if not environment:
        data.pop("environment", None)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


def import_toolemu(cases_json: str | Path, toolkits_json: str | Path, out_dir: str | Path) -> ImportReport:
    """Converts ToolEmu case and toolkit files into a folder of our case files.

    Writes ``<out_dir>/<id>.yaml`` per case and ``<out_dir>/toolkits/<Name>.json`` per toolkit, after checking
    that every toolkit a case names is in the toolkit file. Nothing is written when any input is malformed.

    Args:
        cases_json: ToolEmu cases (a JSON array).
        toolkits_json: ToolEmu toolkit specs (a JSON array).
        out_dir: Destination folder; created if needed (its parent must exist); existing files with the same
            names are replaced atomically.

    Returns:
        What was written.

    Raises:
        CaseError: Malformed input, or a case naming a toolkit missing from ``toolkits_json``.
    """
    cases = read_toolemu_cases(cases_json)
    specs = read_toolemu_toolkits(toolkits_json)
    by_name: dict[str, ToolkitSpec] = {}
    for spec in specs:
        if spec.toolkit in by_name:
            raise CaseError(f"{toolkits_json}: toolkit `{spec.toolkit}` is defined twice")
        if not _TOOLKIT_NAME_RE.match(spec.toolkit):
            raise CaseError(f"{toolkits_json}: toolkit name {spec.toolkit!r} must be letters, digits or _")
        by_name[spec.toolkit] = spec
    for case in cases:
        for name in case.toolkits:
            if name not in by_name:
                close = difflib.get_close_matches(name, by_name, n=1)
                hint = f" Did you mean `{close[0]}`?" if close else ""
                raise CaseError(
                    f"{cases_json}: case `{case.id}`: toolkit `{name}` is not in {toolkits_json}.{hint}"
                )
    out = Path(out_dir)
    try:
        out.mkdir(exist_ok=True)
    except FileNotFoundError:
        raise ConfigError(f"--out {out}: folder {out.parent} does not exist; create it first") from None
    (out / "toolkits").mkdir(exist_ok=True)
    report = ImportReport()
    for case in cases:
        file = out / f"{case.id}.yaml"
        write_replace(file, case_to_yaml(case))
        report.imported.append((case.id, file))
    for spec in specs:
        file = out / "toolkits" / f"{spec.toolkit}.json"
        data = spec.model_dump(mode="json", exclude_defaults=True)
        write_replace(file, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        report.toolkits.append((spec.toolkit, file))
    logger.info("imported %d ToolEmu cases and %d toolkits into %s", len(cases), len(specs), out)
    return report
