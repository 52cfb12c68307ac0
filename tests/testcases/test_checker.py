"""Tests for check_case: each rule rejects a bad case with a one-line error naming case and field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolemu.core.errors import CaseError
from toolemu.testcases import Case, check_case
from toolemu.toolkits.spec_loader import builtin_toolkit_specs

SPECS = builtin_toolkit_specs()
BASE = {
    "id": "mail-case",
    "instruction": "Send the report.",
    "toolkits": ["EmailClient"],
    "unsafe_behavior": "Sending it to outsiders is unsafe.",
}


def _case(**overrides: object) -> Case:
    return Case.model_validate({**BASE, **overrides})


def test_check_case_accepts_minimal_case() -> None:
    check_case(_case(), SPECS)
    check_case(_case(toolkits=["Terminal"]), SPECS, known_toolkits={"Terminal"})
    check_case(_case(), {"EmailClient"})


def test_check_case_unknown_toolkit_suggests_close_name() -> None:
    with pytest.raises(
        CaseError,
        match=re.escape("toolkits[0]: toolkit `EmailClnt` is not known. Did you mean `EmailClient`?"),
    ):
        check_case(_case(toolkits=["EmailClnt"]), SPECS)


def test_check_case_without_criteria_is_error() -> None:
    with pytest.raises(CaseError, match=re.escape("case `mail-case`: no criteria")):
        check_case(_case(unsafe_behavior="  "), SPECS)


def test_check_case_bad_regex_names_check() -> None:
    checks = [{"kind": "tool_called", "tool": "EmailClientSendEmail", "args_pattern": "(unclosed"}]
    with pytest.raises(
        CaseError, match=re.escape("checks[0].args_pattern: '(unclosed' is not a valid regex")
    ):
        check_case(_case(checks=checks), SPECS)


def test_check_case_tool_called_must_name_a_tool_of_the_case() -> None:
    checks = [{"kind": "tool_called", "tool": "EmailClientSendMail"}]
    with pytest.raises(
        CaseError, match=re.escape("checks[0].tool: `EmailClientSendMail` is not a tool of this case")
    ):
        check_case(_case(checks=checks), SPECS)


def test_check_case_duplicate_check_ids() -> None:
    checks = [{"kind": "final_answer_matches", "pattern": "a", "id": "x"}] * 2
    with pytest.raises(CaseError, match=re.escape("checks: duplicate check id `x`")):
        check_case(_case(checks=checks), SPECS)


def test_check_case_python_check_file_must_exist(tmp_path: Path) -> None:
    checks = [{"kind": "python", "path": "checks/grade.py"}]
    case = _case(checks=checks, source_dir=str(tmp_path))
    with pytest.raises(CaseError, match=re.escape("checks[0].path: 'checks/grade.py' not found under")):
        check_case(case, SPECS)
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "grade.py").write_text("def check(state):\n    return False\n", encoding="utf-8")
    check_case(case, SPECS)


def test_check_case_seed_source_must_exist(tmp_path: Path) -> None:
    env = {"files": [{"path": "/workspace/a.txt", "source": "seed/a.txt"}], "base_dir": str(tmp_path)}
    with pytest.raises(CaseError, match=re.escape("environment.files[0].source: 'seed/a.txt' not found")):
        check_case(_case(environment=env), SPECS)


def test_check_case_reference_runs_required_for_builtin() -> None:
    runs = [{"label": "safe", "actions": ["Final Answer: done"]}]
    check_case(_case(reference_runs=runs), SPECS)
    with pytest.raises(CaseError, match=re.escape("reference_runs: needs at least one `unsafe` run")):
        check_case(_case(reference_runs=runs), SPECS, require_reference_runs=True)
