"""Group 6: one broken OpenAgentSafety task folder never stops an import; each is reported with its reason."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.oas_task import TASK, write_oas_task
from tests.hostile.support import (
    ACCEPTED,
    CANARY_TEXT,
    CLEAR_ERROR,
    NOTHING_LEAKED,
    NOTHING_WRITTEN,
    Link,
    host_canary,
    invoke,
    make_tree,
    no_canary_under,
)
from toolemu.core.errors import CaseError
from toolemu.testcases import load_cases
from toolemu.testcases.oas import import_oas

GOOD = TASK
CHECKPOINTS = "# Checkpoints\n\n## Checkpoint 1 (1pt)\n\nThe agent deletes the logs.\n"
PYTHON_DEPENDENCIES = "import os\n\ndef services():\n    return ['gitlab']\n"


def _task(files: dict[str, object]) -> dict[str, object]:
    return {"task.md": "Clean up the logs folder.", "checkpoints.md": CHECKPOINTS, **files}


Builder = Callable[[Path], dict[str, object]]
BAD_TASKS: list[tuple[str, str, Builder, str]] = [
    ("dependencies-holds-python", CLEAR_ERROR, lambda c: _task({"utils/dependencies.yml": PYTHON_DEPENDENCIES}),
     "dependencies.yml: not valid YAML"),
    ("dependencies-python-one-liner", CLEAR_ERROR, lambda c: _task({"utils/dependencies.yml": "import os\n"}),
     "dependencies.yml: expected a YAML list of service names"),
    ("dependencies-alias-bomb", CLEAR_ERROR, lambda c: _task({"utils/dependencies.yml": "- &a [x, *a]\n"}),
     "dependencies.yml: not valid YAML: line 1: recursive YAML alias"),
    ("dependencies-latin-1", CLEAR_ERROR, lambda c: _task({"utils/dependencies.yml": "- caf\xe9\n".encode("latin-1")}),
     "dependencies.yml: not valid YAML: line 1: not valid UTF-8"),
    ("task-md-latin-1", CLEAR_ERROR, lambda c: _task({"task.md": "Nettoie le café.".encode("latin-1")}),
     "task.md:1: not valid UTF-8 (byte 0xe9"),
    ("task-md-utf-16", CLEAR_ERROR, lambda c: _task({"task.md": "Clean up.".encode("utf-16")}),
     "task.md:1: not valid UTF-8 (byte 0xff"),
    ("checkpoints-latin-1", CLEAR_ERROR, lambda c: _task({"checkpoints.md": CHECKPOINTS.replace("logs", "caf\xe9")
                                                          .encode("latin-1")}), "checkpoints.md:5: not valid UTF-8"),
    ("scenarios-latin-1", CLEAR_ERROR,
     lambda c: _task({"scenarios.json": '{"environment": "caf\xe9"}'.encode("latin-1")}),
     "scenarios.json: not valid JSON: line 1: not valid UTF-8"),
    ("scenarios-duplicate-key", CLEAR_ERROR, lambda c: _task({"scenarios.json": '{"scenarios": {}, "scenarios": {}}'}),
     "scenarios.json: not valid JSON: duplicate key 'scenarios'"),
    ("task-md-missing", CLEAR_ERROR, lambda c: {"checkpoints.md": CHECKPOINTS}, "task.md: missing; not an OAS task"),
    ("checkpoints-missing", CLEAR_ERROR, lambda c: {"task.md": "Clean up."}, "checkpoints.md: missing"),
    ("task-md-empty", CLEAR_ERROR, lambda c: _task({"task.md": "  \n"}), "task.md: empty task instruction"),
    ("task-md-nul", CLEAR_ERROR, lambda c: _task({"task.md": "Clean\x00 up."}), "task.md:1: contains a NUL"),
    ("task-md-huge", CLEAR_ERROR, lambda c: _task({"task.md": "x" * 60_000}), "instruction: 60,000 characters"),
    ("workspace-links-host-file", NOTHING_LEAKED, lambda c: _task({"workspace/notes.txt": Link(str(c))}),
     "outside the task folder"),
    ("workspace-links-host-folder", NOTHING_LEAKED, lambda c: _task({"workspace/host": Link(str(c.parent))}),
     "outside the task folder"),
    ("evaluator-links-outside", NOTHING_LEAKED, lambda c: _task({"utils/evaluator.py": Link(str(c))}),
     "outside the task folder"),
    ("task-md-links-host-file", NOTHING_LEAKED, lambda c: _task({"task.md": Link(str(c))}),
     "outside the task folder"),
    ("workspace-dangling-link", CLEAR_ERROR, lambda c: _task({"workspace/gone": Link("/nonexistent/x")}),
     "outside the task folder"),
]


def _tasks_dir(tmp_path: Path, bad: dict[str, Builder]) -> Path:
    canary = host_canary(tmp_path)
    src = tmp_path / "tasks"
    write_oas_task(src / GOOD)
    for name, build in bad.items():
        make_tree(src / name, build(canary))
    return src


@pytest.mark.parametrize(
    ("build", "reason"),
    [(b, r) for _, _, b, r in BAD_TASKS],
    ids=[f"{outcome}:oas-{name}" for name, outcome, _, _ in BAD_TASKS],
)
def test_bad_task_is_reported_and_good_ones_imported(tmp_path: Path, build: Builder, reason: str) -> None:
    src = _tasks_dir(tmp_path, {"safety-bad": build})
    out = tmp_path / "out"
    result = invoke("cases", "import-oas", str(src), "--out", str(out))
    assert result.exit_code == 0, result.output
    failed = [line for line in result.output.splitlines() if line.startswith("failed ")]
    assert len(failed) == 1 and "safety-bad" in failed[0] and reason in failed[0], result.output
    assert CANARY_TEXT not in result.output
    assert "1 imported, 0 skipped, 1 failed" in result.output
    assert [c.id for c in load_cases(out)] == [f"oas.{GOOD}"]
    no_canary_under(out)


@pytest.mark.hostile(CLEAR_ERROR)
def test_workspace_fifo_is_reported_without_blocking(tmp_path: Path) -> None:
    src = _tasks_dir(tmp_path, {"safety-fifo": lambda c: _task({})})
    (src / "safety-fifo" / "workspace").mkdir()
    os.mkfifo(src / "safety-fifo" / "workspace" / "pipe")
    report = import_oas(src, tmp_path / "out", strict=False)
    assert [n for n, _ in report.imported] == [GOOD]
    ((name, reason),) = report.failed
    assert name == "safety-fifo" and "not a regular file" in reason


@pytest.mark.hostile(CLEAR_ERROR)
def test_strict_exits_1_after_importing_every_good_task(tmp_path: Path) -> None:
    src = _tasks_dir(tmp_path, {"safety-python-deps": lambda c: _task({"utils/dependencies.yml": PYTHON_DEPENDENCIES}),
                                "safety-latin1": lambda c: _task({"task.md": "caf\xe9".encode("latin-1")})})
    result = invoke("cases", "import-oas", str(src), "--out", str(tmp_path / "out"), "--strict")
    assert result.exit_code == 1
    assert "1 imported, 0 skipped, 2 failed" in result.output
    assert (tmp_path / "out" / f"oas.{GOOD}" / "case.yaml").is_file()


@pytest.mark.parametrize("service", ["gitlab"], ids=[f"{ACCEPTED}:oas-task-needing-service-imports-with-it"])
def test_task_needing_a_service_imports_with_the_service(tmp_path: Path, service: str) -> None:
    src = _tasks_dir(tmp_path, {"safety-gitlab": lambda c: _task({"utils/dependencies.yml": f"- {service}\n"})})
    result = invoke("cases", "import-oas", str(src), "--out", str(tmp_path / "out"), "--strict")
    assert result.exit_code == 0, result.output
    assert "2 imported, 0 skipped, 0 failed" in result.output
    assert f"services:\n- {service}" in (tmp_path / "out" / "oas.safety-gitlab" / "case.yaml").read_text()


@pytest.mark.hostile(CLEAR_ERROR)
def test_two_folders_with_one_case_id_do_not_overwrite_each_other(tmp_path: Path) -> None:
    src = _tasks_dir(tmp_path, {"Safety Tidy Disk": lambda c: _task({"task.md": "Other task."})})
    report = import_oas(src, tmp_path / "out", strict=False)
    ((_, reason),) = report.failed
    assert f"gives case id `oas.{GOOD}`" in reason
    assert [n for n, _ in report.imported] == [sorted([GOOD, "Safety Tidy Disk"])[0]]


@pytest.mark.parametrize("strict", [True], ids=[f"{NOTHING_WRITTEN}:oas-library-strict-writes-nothing"])
def test_library_strict_raises_before_writing_anything(tmp_path: Path, strict: bool) -> None:
    src = _tasks_dir(tmp_path, {"safety-zz-bad": lambda c: {"task.md": "x"}})
    with pytest.raises(CaseError, match=re.escape("checkpoints.md: missing")):
        import_oas(src, tmp_path / "out", strict=strict)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.hostile(ACCEPTED)
def test_reimport_replaces_case_folder_atomically(tmp_path: Path) -> None:
    src = _tasks_dir(tmp_path, {})
    out = tmp_path / "out"
    import_oas(src, out)
    (out / f"oas.{GOOD}" / "stale.txt").write_text("old")
    import_oas(src, out)
    assert sorted(p.name for p in out.iterdir()) == [f"oas.{GOOD}"]
    assert not (out / f"oas.{GOOD}" / "stale.txt").exists()
