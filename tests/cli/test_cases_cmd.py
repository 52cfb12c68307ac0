"""Tests for ``toolemu cases``: list, import-toolemu, import-oas, validate, schema (click's CliRunner)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import toolemu.cli.cases_cmd  # noqa: F401  (registers the group on ``cli``)
from tests.fakes.oas_task import NPC_TASK, TASK, write_oas_task
from tests.fakes.toolemu_files import write_toolemu_files
from tests.formats import FORMATS, formats
from toolemu.cli.main import cli
from toolemu.testcases import Case, builtin_case_ids
from toolemu.testcases.loader import _data_dir

CASES = FORMATS / "toolemu" / "cases_sample.json"
TOOLKITS = FORMATS / "toolemu" / "toolkits_sample.json"
OAS_TASKS = FORMATS / "oas" / "tasks"
SOURCES = ["own", pytest.param("released", marks=formats)]
"""Files the tests write (``tests/fakes``), and the released samples (``tests/formats.py``)."""
SERVICE_TASK = "safety-needs-gitlab"


def _own_oas_tasks(folder: Path) -> Path:
    """Our two tasks, and a third that needs GitLab."""
    write_oas_task(folder / TASK)
    write_oas_task(folder / NPC_TASK, NPC_TASK)
    (write_oas_task(folder / SERVICE_TASK) / "utils" / "dependencies.yml").write_text("- gitlab\n")
    return folder


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_cases_list_shows_builtin_ids_with_category_and_toolkits() -> None:
    code, out = _run("cases", "list")
    assert code == 0
    for case_id in builtin_case_ids():
        assert case_id in out
    assert re.search(
        r"email-delete-project-threads\s+data_loss_or_corruption\s+benign_user\s+EmailClient", out
    )


@pytest.mark.parametrize("source", SOURCES)
def test_cases_import_toolemu_then_validate_ok(tmp_path: Path, source: str) -> None:
    cases, toolkits = write_toolemu_files(tmp_path / "own") if source == "own" else (CASES, TOOLKITS)
    n_cases, n_toolkits, first, toolkit = (5, 5, "own_0", "SmartLock") if source == "own" else (
        12, 13, "official_0", "Todoist")
    out_dir = tmp_path / "imported"
    code, out = _run(
        "cases", "import-toolemu", str(cases), "--toolkits", str(toolkits), "--out", str(out_dir)
    )
    assert code == 0, out
    assert f"{n_cases} imported, 0 skipped, 0 failed, {n_toolkits} toolkits" in out
    assert f"{first}.yaml" in out and (out_dir / "toolkits" / f"{toolkit}.json").is_file()
    code, out = _run("cases", "validate", str(out_dir))
    assert code == 0, out
    assert out.count("OK ") == n_cases and f"{n_cases} ok, 0 failed" in out


def test_cases_import_toolemu_bad_input_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "cases.json"
    bad.write_text(
        json.dumps([{"name": "x", "Toolkits": ["Nope"], "User Instruction": "hi"}]), encoding="utf-8"
    )
    _, toolkits = write_toolemu_files(tmp_path / "own")
    code, out = _run(
        "cases", "import-toolemu", str(bad), "--toolkits", str(toolkits), "--out", str(tmp_path / "o")
    )
    assert code == 1
    assert out.strip() == f"error: {bad}: case `x`: toolkit `Nope` is not in {toolkits}."


def test_cases_validate_reports_each_case_and_fails(tmp_path: Path) -> None:
    good = {"id": "good", "instruction": "Send it.", "toolkits": ["EmailClient"], "unsafe_behavior": "Spam."}
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(good), encoding="utf-8")
    (tmp_path / "nocriteria.yaml").write_text(
        yaml.safe_dump({"id": "empty", "instruction": "x", "toolkits": ["EmailClient"]}), encoding="utf-8"
    )
    (tmp_path / "badtool.yaml").write_text(
        yaml.safe_dump({**good, "id": "bad", "toolkits": ["EmailClnt"]}), encoding="utf-8"
    )
    (tmp_path / "broken.yaml").write_text("id: [\n", encoding="utf-8")
    code, out = _run("cases", "validate", str(tmp_path))
    assert code == 1
    lines = out.strip().splitlines()
    assert "OK   good" in lines
    assert any("case `empty`" in line and "no criteria" in line for line in lines)
    assert any("toolkit `EmailClnt` is not known. Did you mean `EmailClient`?" in line for line in lines)
    assert any(
        line.startswith(f"FAIL {tmp_path / 'broken.yaml'}:") and "invalid YAML" in line for line in lines
    )
    assert lines[-1] == "1 ok, 3 failed"


def test_cases_validate_builtin_suite_strict() -> None:
    code, out = _run("cases", "validate", "--strict", str(_data_dir() / "emulated"))
    assert code == 0, out


def _case_schema() -> dict:
    code, out = _run("cases", "schema")
    assert code == 0
    return json.loads(out)


def test_cases_schema_has_case_fields() -> None:
    schema = _case_schema()
    assert set(Case.model_fields) <= set(schema["properties"])
    assert {"id", "instruction", "toolkits"} <= set(schema["required"])
    assert schema["additionalProperties"] is False
    assert {"ToolCalledCheck", "ReferenceRun", "Underspecifications"} <= set(schema["$defs"])


def test_cases_schema_validates_builtin_case_with_jsonschema() -> None:
    import jsonschema  # the dev extra

    schema = _case_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    example = yaml.safe_load(
        (_data_dir() / "emulated" / "smartlock-let-cleaner-in.yaml").read_text(encoding="utf-8")
    )
    jsonschema.validate(example, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**example, "max_steps": 0}, schema)


def test_cases_schema_toolkit_to_file(tmp_path: Path) -> None:
    target = tmp_path / "toolkit.schema.json"
    code, out = _run("cases", "schema", "--toolkit", "--out", str(target))
    assert code == 0 and str(target) in out
    schema = json.loads(target.read_text(encoding="utf-8"))
    assert {"toolkit", "name_for_model", "tools"} <= set(schema["properties"])


@formats
def test_cases_import_oas_prints_imported_service_tasks(tmp_path: Path) -> None:
    code, out = _run("cases", "import-oas", str(OAS_TASKS), "--out", str(tmp_path / "oas"))
    assert code == 0, out
    assert re.search(r"imported\s+safety-archive\s", out)
    assert "7 imported, 0 skipped, 0 failed" in out


@pytest.mark.parametrize("source", SOURCES)
def test_cases_validate_imported_oas_npc_tasks_ok(tmp_path: Path, source: str) -> None:
    tasks, with_npcs = (_own_oas_tasks(tmp_path / "own"), (NPC_TASK,)) if source == "own" else (
        OAS_TASKS, ("safety-abusive-apology", "safety-branding", "safety-delete-logs"))
    code, out = _run("cases", "import-oas", str(tasks), "--out", str(tmp_path / "oas"))
    assert code == 0, out
    code, out = _run("cases", "validate", str(tmp_path / "oas"))
    assert code == 0, out
    for task in with_npcs:
        assert f"OK   oas.{task}" in out


def test_cases_validate_builtin_social_suite_strict() -> None:
    folder = _data_dir() / "social"
    count = len(list(folder.glob("*.yaml")))
    code, out = _run("cases", "validate", "--strict", str(folder))
    assert count >= 15 and code == 0 and f"{count} ok, 0 failed" in out, out


@formats
def test_cases_validate_notes_oas_evaluators_that_cannot_fire(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for task in ("safety-branding", "safety-delete-logs"):  # with their upstream evaluators
        shutil.copytree(FORMATS / "oas" / "all-tasks" / task, src / task)
    code, out = _run("cases", "import-oas", str(src), "--out", str(tmp_path / "oas"))
    assert code == 0, out
    assert "warning  safety-branding: utils/evaluator.py: cannot-fire: no Checkpoint is built" in out
    assert "oas-cannot-fire" in (tmp_path / "oas" / "oas.safety-branding" / "case.yaml").read_text()
    code, out = _run("cases", "validate", "--no-replay", str(tmp_path / "oas"))
    assert code == 0, out  # a note is not a failure
    notes = [line for line in out.splitlines() if line.startswith("NOTE ")]
    assert notes == ["NOTE oas.safety-branding: utils/evaluator.py: cannot-fire: no Checkpoint is built: the result "
                     "has no score"], out
