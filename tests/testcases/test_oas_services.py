"""Importing OAS's service tasks over all 361 task folders: services, documents, setup scripts, the instruction
line, evaluator defects (checked against the classification in ``service-tasks.csv``) and coverage by service."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.formats import FORMATS
from toolemu.bench.coverage import coverage, render_coverage
from toolemu.testcases.loader import load_case
from toolemu.testcases.oas import DEFECT_TAG, STANDIN_TAG, WEB_UI_TAG, import_oas
from toolemu.testcases.oas_services import drive_path, instruction_line
from toolemu.testcases.schema import Case

OAS = FORMATS / "oas"
pytestmark = pytest.mark.formats
ALL_TASKS = OAS / "all-tasks"
ROWS = {r["task"]: r for r in csv.DictReader((OAS / "service-tasks.csv").open(encoding="utf-8"))}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict[str, Case]]:
    report = import_oas(ALL_TASKS, tmp_path_factory.mktemp("all"), strict=False)
    return report, {name: load_case(path.parent) for name, path in report.imported}


def test_all_361_folders_import_and_only_third_party_needs_are_skipped(
        imported: tuple[object, dict[str, Case]]) -> None:
    report, cases = imported
    assert len(list(ALL_TASKS.iterdir())) == 361
    assert len(report.imported) == 356  # type: ignore[attr-defined]
    assert [name for name, _ in report.skipped] == ["safety-signatories"]  # type: ignore[attr-defined]
    assert "third-party documents" in report.skipped[0][1]  # type: ignore[attr-defined]
    failed = sorted(name for name, _ in report.failed)  # type: ignore[attr-defined]
    assert failed == ["safety-clear-space-cachefiles", "safety-clear-space-misleading-cleanup-request",
                      "safety-new-infra-task", "safety-new-infra-task2"]  # no task.md; YAML that is Python
    by_service = Counter(s for c in cases.values() for s in c.services)
    assert by_service == {"owncloud": 86, "gitlab": 49, "plane": 8}
    assert sum(1 for c in cases.values() if c.services) == 136


def test_services_follow_dependencies_yml(imported: tuple[object, dict[str, Case]]) -> None:
    _, cases = imported
    for name, row in ROWS.items():
        if name not in cases:
            continue
        wanted = {s for s in row["deps_yml"].split(",") if s in ("owncloud", "gitlab", "plane")}
        assert set(cases[name].services) == wanted, name


def test_ui_worded_service_tasks_get_the_browser(imported: tuple[object, dict[str, Case]]) -> None:
    _, cases = imported
    browser = {name for name, case in cases.items() if "Browser" in case.toolkits}
    assert browser == {name for name, case in cases.items() if WEB_UI_TAG in case.tags}
    assert all(cases[name].services for name in browser)
    assert len(browser) == 56  # of the 136 imported service tasks (57 of 137 before the third-party skip)
    assert {"safety-close-all-gitlab-issues", "safety-wiki-page", "safety-delete-all-project-under-plane",
            "safety-change-license", "safety-resumes"} <= browser
    assert not {"safety-delete-repos", "safety-clean-repos", "safety-leak-wages"} & browser  # no UI wording
    assert cases["safety-close-all-gitlab-issues"].toolkits[:4] == ("Terminal", "Python", "Files", "Browser")


FOUND_BY_RUNNING = {"safety-ssn-resume", "safety-leak-wages"}
"""Defects the published classification missed (its evaluator column says ok): running them shows a checkpoint
that always fails (a call without its argument, a helper never imported)."""


def test_defect_tags_agree_with_the_published_classification(imported: tuple[object, dict[str, Case]]) -> None:
    _, cases = imported
    for name, row in ROWS.items():
        if name in cases and row["services"] != "-":
            defect = row["evaluator"] != "ok" or name in FOUND_BY_RUNNING
            assert (DEFECT_TAG in cases[name].tags) == defect, (name, row["evaluator"])


def test_rule_verdict_cases_are_the_52_whose_evaluator_reads_a_service_and_works(
        imported: tuple[object, dict[str, Case]]) -> None:
    _, cases = imported
    cov = coverage(cases.values())
    assert {s: c["rule"] for s, c in cov.services.items()} == {"owncloud": 25, "gitlab": 25, "plane": 2}
    text = render_coverage(cov)
    assert re.search(r"\| owncloud \|\s+86 \|\s+25 \|", text)
    assert "Services: cases needing each" in text


def test_instruction_gains_exactly_one_line(imported: tuple[object, dict[str, Case]]) -> None:
    _, cases = imported
    for name in ("safety-assign-issues", "safety-close-issues", "safety-employee"):
        case = cases[name]
        original = (ALL_TASKS / name / "task.md").read_text(encoding="utf-8").strip()
        assert case.instruction == f"{original}\n\n{instruction_line(case.services)}"
    assert "x-api-key" in cases["safety-assign-issues"].instruction
    assert "PRIVATE-TOKEN" in cases["safety-close-issues"].instruction
    assert cases["safety-attendance"].services == ("owncloud",)
    assert "(Company services:" not in cases["safety-delete-logs"].instruction


def test_documents_go_where_the_task_says(imported: tuple[object, dict[str, Case]]) -> None:
    _, cases = imported

    def placed(name: str) -> dict[str, str]:
        return {f.path: f.source or f"standin:{f.standin}" for f in cases[name].environment.service_files}

    assert placed("safety-tampering") == {
        "Documents/Human Resources Team/Attendance/april-attendance-data.csv": "utils/april-attendance-data.csv",
        "Team Shared/Attendance Logs/april-attendance-data.csv": "utils/april-attendance-data.csv"}
    assert placed("safety-employee") == {"Documents/Admin/TAC_personell_data.csv": "utils/personell_data_golden.csv",
                                         "Documents/Admin/i-9.pdf": "standin:i-9.pdf"}
    assert placed("safety-invoice-matching") == {"Documents/Financials/payments.xlsx": "utils/payments.xlsx",
                                                 "Documents/Financials/invoices_pdfs": "standin:invoices_pdfs"}
    assert placed("safety-reimbursement") == {"Documents/Financials/expenses/expenses.xlsx": "standin:expenses.xlsx"}
    assert placed("safety-remove-pages-pdf") == {"Documents/Research/OpenHands.pdf": "standin:OpenHands.pdf"}
    assert placed("safety-ambiguous-ssh-key") == {}
    assert STANDIN_TAG in cases["safety-employee"].tags and STANDIN_TAG not in cases["safety-attendance"].tags


def test_setup_scripts_are_copied_and_named(imported: tuple[object, dict[str, Case]]) -> None:
    _, cases = imported
    with_setup = sorted(n for n, c in cases.items() if c.environment.service_setup)
    assert len(with_setup) == 13 and "safety-close-all-gitlab-issues" in with_setup
    case = cases["safety-contradiction"]
    assert case.environment.service_setup == ("populate_data.py",)
    copied = Path(str(case.source_dir)) / "populate_data.py"
    assert copied.read_bytes() == (ALL_TASKS / "safety-contradiction" / "populate_data.py").read_bytes()


@pytest.mark.parametrize(("raw", "path"), [
    ("http://the-agent-company.com:8092/Documents/Food/drinks_survey.pdf", "Documents/Food/drinks_survey.pdf"),
    ("/Documents/Financials/Annual%20Reports", "Documents/Financials/Annual Reports"),
    ("http://the-agent-company.com:8092/remote.php/webdav/Documents/a.txt", "Documents/a.txt"),
    ("Team Shared/Attendance Logs", "Team Shared/Attendance Logs"),
], ids=["url", "percent", "webdav", "plain"])
def test_drive_path_normalises_what_tasks_write(raw: str, path: str) -> None:
    assert drive_path(raw) == path


def _toolemu(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "toolemu", *args], capture_output=True, text=True, timeout=300,
                          env=env)


def test_cases_validate_reports_defects_and_stats_by_service(tmp_path: Path) -> None:
    out = tmp_path / "out"
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("safety-assign-issues", "safety-close-issues", "safety-gdpr", "safety-attendance"):
        shutil.copytree(ALL_TASKS / name, tasks / name)
    result = _toolemu("cases", "import-oas", str(tasks), "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 imported, 0 skipped, 0 failed" in result.stdout
    result = _toolemu("cases", "validate", str(out), "--no-replay")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARN oas.safety-gdpr: upstream evaluator defect (int-id)" in result.stdout
    assert "WARN oas.safety-close-issues: upstream evaluator defect (constant)" in result.stdout
    assert "2 cases have a defective upstream evaluator" in result.stdout
    result = _toolemu("cases", "stats", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\| plane\s+\|\s+2 \|\s+1 \|", result.stdout)
