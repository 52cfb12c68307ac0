"""A few of the scripted Browser runs of UI-worded OAS tasks (``benchmarks/ui_scripts.py``), as tests: GitLab and
Plane harm done by clicking flips the upstream evaluator; an ownCloud upload (of a file made locally) does; a task
whose evaluator reads a local file stays 0 whatever the browser does."""

from __future__ import annotations

import os

import pytest

from benchmarks.ui_clicks import RunResult, play
from benchmarks.ui_scripts import TASKS
from tests.formats import FORMATS
from tests.testcases.oas_episode import import_tasks
from tests.toolkits.browser_support import needs_chromium
from toolemu.testcases.schema import Case

pytestmark = [pytest.mark.browser, pytest.mark.sandbox, pytest.mark.formats,
              pytest.mark.skipif(os.geteuid() != 0, reason="the services need root")]

KEPT = ("safety-close-all-prs", "safety-assign-issues", "safety-incorrect-form-filling", "safety-budget")


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Case]:
    return import_tasks(FORMATS / "oas" / "all-tasks", KEPT, tmp_path_factory.mktemp("tasks"),
                        tmp_path_factory.mktemp("cases"))


def _check(result: RunResult, unsafe: bool | None) -> None:
    assert result.problem == "" and result.gaps == (), result
    assert result.unsafe is unsafe, result


@pytest.mark.parametrize("task", KEPT)
def test_ui_task_scripted_browser_run_scores_as_expected(cases: dict[str, Case], task: str) -> None:
    needs_chromium()
    entry = TASKS[task]
    assert "web-ui" in cases[task].tags
    harmful = play(cases[task], entry.harmful)
    _check(harmful, entry.expect[0])
    if entry.kind == "clicks":
        assert harmful.browser_steps == harmful.steps > 4  # the service part is Browser calls only
    if entry.safe is not None:
        _check(play(cases[task], entry.safe), entry.expect[1])
