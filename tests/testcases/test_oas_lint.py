"""Static checks of OAS task folders: missing assets and evaluators that cannot fire (parsed, never run)."""

from __future__ import annotations

import collections
from pathlib import Path

from tests.formats import OAS_TASKS, require_formats
from toolemu.testcases.oas_lint import lint_task

GOOD = """from scoring import Result, Checkpoint
CONFIG = "/workspace/config.yaml"
def grade_checkpoint1(trajectory: str) -> bool:
    with open(CONFIG) as f:
        return "x" in f.read()
def grade_checkpoints(trajectory=""):
    return Result([Checkpoint(1, int(grade_checkpoint1(trajectory)))])
"""


def _task(tmp_path: Path, evaluator: str, task_md: str = "Review `/workspace/config.yaml`.\n",
          ship: bool = True) -> Path:
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "evaluator.py").write_text(evaluator)
    (tmp_path / "task.md").write_text(task_md)
    if ship:
        (tmp_path / "workspace").mkdir()
        (tmp_path / "workspace" / "config.yaml").write_text("a: 1\n")
    return tmp_path


def test_clean_task_has_no_finding(tmp_path: Path) -> None:
    assert lint_task(_task(tmp_path, GOOD)) == []


def test_missing_input_asset_is_flagged(tmp_path: Path) -> None:
    (found,) = lint_task(_task(tmp_path, GOOD, ship=False))
    assert found.kind == "missing-asset" and "/workspace/config.yaml" in found.message
    assert found.file == "utils/evaluator.py" and ".gitignore" in found.message


def test_output_the_agent_writes_is_not_flagged(tmp_path: Path) -> None:
    task = _task(tmp_path, GOOD, task_md="Write the settings to `/workspace/config.yaml`.\n", ship=False)
    assert lint_task(task) == []


def test_constant_checkpoint_and_constant_grader(tmp_path: Path) -> None:
    src = GOOD.replace("int(grade_checkpoint1(trajectory))", "int(False)").replace(
        'return "x" in f.read()', "return False")
    messages = [f.message for f in lint_task(_task(tmp_path, src))]
    assert "every Checkpoint has a constant result" in messages
    assert "grade_checkpoint1 always returns False" in messages


def test_list_str_iteration_is_flagged(tmp_path: Path) -> None:
    src = GOOD.replace('def grade_checkpoint1(trajectory: str) -> bool:\n    with open(CONFIG) as f:\n'
                       '        return "x" in f.read()',
                       "def grade_checkpoint1(trajectory: List[str]) -> bool:\n"
                       "    return any('rm' in m for m in trajectory)")
    (found,) = lint_task(_task(tmp_path, src))
    assert found.kind == "cannot-fire" and "typed List[str]" in found.message


def test_no_grade_checkpoints_nor_checkpoint(tmp_path: Path) -> None:
    messages = {f.message.split(":")[0] for f in lint_task(_task(tmp_path, "x = 1\n"))}
    assert messages == {"no grade_checkpoints function", "no Checkpoint is built"}


def test_unparsable_evaluator_is_reported(tmp_path: Path) -> None:
    (found,) = lint_task(_task(tmp_path, "def (:\n"))
    assert found.kind == "unparsed" and "SyntaxError" in found.message


def test_real_task_folders_never_raise() -> None:
    require_formats()
    root = OAS_TASKS.parent / "all-tasks"
    tasks = sorted(p for p in root.iterdir() if p.is_dir())
    assert len(tasks) == 361
    counts: collections.Counter[str] = collections.Counter()
    for task in tasks:
        for f in lint_task(task):
            counts[f.kind if f.kind != "cannot-fire" else f.message.split(":")[0].split(" always")[0]] += 1
    print(dict(counts))
    assert counts["unparsed"] == 0 and counts["grade_checkpoint1 typed List[str]"] == 5


def test_import_oas_records_findings(tmp_path: Path) -> None:
    from toolemu.testcases.oas import import_oas

    task = tmp_path / "safety-dead"
    task.mkdir()
    _task(task, GOOD.replace("int(grade_checkpoint1(trajectory))", "0"))
    (task / "checkpoints.md").write_text("## Checkpoint 1 (1pt)\nIt reads the config.\n")
    out = tmp_path / "out"
    report = import_oas(task, out, strict=False)
    assert report.failed == [] and len(report.imported) == 1
    assert [name for name, _ in report.findings] == ["safety-dead"]
    assert "every Checkpoint has a constant result" in report.findings[0][1]
