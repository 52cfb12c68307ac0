"""Tests for the ToolEmu importer: built-in and released sample cases and toolkits load and round trip; errors
name file and path."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from tests.fakes.toolemu_files import toolemu_cases, write_toolemu_files
from tests.formats import FORMATS, formats, formats_problem, sample_params
from toolemu.core.errors import CaseError
from toolemu.testcases import (
    Intent,
    RiskCategory,
    import_toolemu,
    load_case,
    load_cases,
    read_toolemu_cases,
    risk_category_of,
)
from toolemu.testcases.toolemu_format import slugify
from toolemu.toolkits.spec_loader import load_toolkit_specs

CASES = FORMATS / "toolemu" / "cases_sample.json"
TOOLKITS = FORMATS / "toolemu" / "toolkits_sample.json"
SAMPLE: list[dict] = json.loads(CASES.read_text(encoding="utf-8")) if formats_problem() is None else []
"""The released sample cases (empty when the samples are missing: every test reading them is marked ``formats``)."""
RAW = toolemu_cases()
"""Built-in cases in ToolEmu's format, for the error paths."""


@pytest.fixture
def own_files(tmp_path: Path) -> tuple[Path, Path]:
    return write_toolemu_files(tmp_path / "own")


@pytest.mark.parametrize("raw", [*sample_params(lambda: SAMPLE, lambda r: r["name"]),
                                 *[pytest.param(r, id=r["name"]) for r in RAW]])
def test_load_case_toolemu_dict_keeps_every_field(raw: dict) -> None:
    case = load_case(raw)
    assert case.id == slugify(raw["name"])
    assert case.instruction == raw["User Instruction"]
    assert case.toolkits == tuple(raw["Toolkits"])
    assert case.expected_achievements == tuple(raw["Expected Achievements"])
    assert case.risky_outcomes == tuple(raw["Potential Risky Outcomes"])
    assert case.risky_actions == tuple(raw["Potential Risky Actions"])
    under = raw["Underspecifications"]
    assert case.underspecifications.task_information == tuple(under["Task Information"])
    assert case.underspecifications.safety_constraints == tuple(under["Safety & Security Constraints"])
    assert case.intent is Intent.BENIGN and case.tags == ("toolemu",)
    assert all(action.strip() in case.unsafe_behavior for action in raw["Potential Risky Actions"])


@formats
def test_import_toolemu_writes_cases_and_toolkits(tmp_path: Path) -> None:
    report = import_toolemu(CASES, TOOLKITS, tmp_path)
    assert [cid for cid, _ in report.cases] == [slugify(r["name"]) for r in SAMPLE]
    assert len(report.toolkits) == 13
    assert all(path.is_file() for _, path in report.cases + report.toolkits)
    assert (tmp_path / "toolkits" / "Gmail.json").is_file()


@pytest.mark.parametrize("source", ["own", pytest.param("released", marks=formats)])
def test_import_toolemu_round_trip_loads_back_equal(tmp_path: Path, source: str) -> None:
    cases, toolkits = write_toolemu_files(tmp_path / "own") if source == "own" else (CASES, TOOLKITS)
    tmp_path = tmp_path / "out"
    import_toolemu(cases, toolkits, tmp_path)
    loaded = {c.id: c for c in load_cases(tmp_path)}
    for case in read_toolemu_cases(cases):
        back = loaded[case.id]
        assert (
            back.model_copy(update={"source_dir": None, "source_file": None, "environment": case.environment}) == case
        )
        assert back.source_dir == str(tmp_path.resolve())
    assert load_toolkit_specs(tmp_path / "toolkits") == load_toolkit_specs(toolkits)


def test_import_toolemu_missing_toolkit_names_case_and_toolkit(tmp_path: Path,
                                                             own_files: tuple[Path, Path]) -> None:
    _, toolkits = own_files
    raw = copy.deepcopy(RAW)
    raw[2]["Toolkits"] = ["SmartLock", "EmailClent"]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(raw), encoding="utf-8")
    expected = f"{cases}: case `own_2`: toolkit `EmailClent` is not in {toolkits}. Did you mean `EmailClient`?"
    with pytest.raises(CaseError, match=re.escape(expected)):
        import_toolemu(cases, toolkits, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_read_toolemu_cases_unknown_key_names_file_and_path(tmp_path: Path) -> None:
    raw = copy.deepcopy(RAW)
    raw[4]["Risk Level"] = "high"
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(CaseError, match=re.escape(f"{path}: [4].Risk Level: unknown ToolEmu case key")):
        read_toolemu_cases(path)


def test_read_toolemu_cases_bad_underspecification_key(tmp_path: Path) -> None:
    raw = copy.deepcopy(RAW)
    raw[0]["Underspecifications"]["Safety Constraints"] = []
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(CaseError, match=re.escape(f"{path}: [0].Underspecifications.Safety Constraints: unknown")):
        read_toolemu_cases(path)


def test_read_toolemu_cases_missing_instruction_and_wrong_type(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    raw = copy.deepcopy(RAW)
    del raw[1]["User Instruction"]
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(CaseError, match=re.escape(f"{path}: [1].User Instruction: missing")):
        read_toolemu_cases(path)
    raw = copy.deepcopy(RAW)
    raw[3]["Expected Achievements"] = "do it"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(CaseError, match=re.escape(f"{path}: [3].Expected Achievements: expected a list of strings")):
        read_toolemu_cases(path)


def test_read_toolemu_cases_duplicate_name_is_error(tmp_path: Path) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([RAW[0], RAW[0]]), encoding="utf-8")
    with pytest.raises(CaseError, match=re.escape(f"{path}: [1]: duplicate case id `own_0`")):
        read_toolemu_cases(path)


def test_import_toolemu_bad_toolkit_names_file_and_path(tmp_path: Path, own_files: tuple[Path, Path]) -> None:
    cases, toolkits = own_files
    data = json.loads(toolkits.read_text(encoding="utf-8"))
    data[3]["tools"][1]["returns"][0]["type"] = "list"
    path = tmp_path / "toolkits.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CaseError, match=re.escape(f"{path}: [3].tools[1].returns[0].type: 'list' is not one of")):
        import_toolemu(cases, path, tmp_path / "out")


@formats
def test_risk_category_of_sample_prefixes() -> None:
    by_id = {c.id: c.risk_category for c in read_toolemu_cases(CASES)}
    assert by_id["official_0"] is RiskCategory.DATA_LOSS
    assert by_id["official_10"] is RiskCategory.FINANCIAL_LOSS
    assert by_id["official_20"] is RiskCategory.PRIVACY
    assert by_id["official_120"] is RiskCategory.LEGAL
    assert risk_category_of(["Inconvenience: the parcel is late."]) is None
    assert risk_category_of(["no prefix here"]) is None
    assert risk_category_of(["Reputation damage: x", "Security Breach: y"]) is RiskCategory.COMPUTER_SECURITY


def test_slugify_rejects_empty_name() -> None:
    with pytest.raises(CaseError, match="no letters or digits"):
        slugify("!!")
