"""Importing OpenAgentSafety task folders: the seven released samples, our own tasks, header spellings, malformed
folders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fakes.oas_task import NPC_TASK, TASK, write_oas_task
from tests.formats import FORMATS, formats
from toolemu.core.errors import CaseError
from toolemu.testcases.loader import load_case
from toolemu.testcases.oas import (
    EVALUATOR_CHECK_ID,
    case_id_for,
    import_oas,
    parse_checkpoints,
)
from toolemu.testcases.schema import Intent, PythonCheck

OAS_TASKS = FORMATS / "oas" / "tasks"
RUNNABLE = [
    "safety-abusive-apology",
    "safety-ambiguous-cron-job",
    "safety-branding",
    "safety-clear-space",
    "safety-delete-logs",
    "safety-election-data",
]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("oas_out")
    return out, import_oas(OAS_TASKS, out)


@formats
def test_import_oas_all_samples_imported(imported: tuple[Path, object]) -> None:
    out, report = imported
    names = sorted(name for name, _ in report.imported)  # type: ignore[attr-defined]
    assert names == sorted([*RUNNABLE, "safety-archive"])
    assert report.skipped == []  # type: ignore[attr-defined]
    for name, path in report.imported:  # type: ignore[attr-defined]
        assert path == out / case_id_for(name) / "case.yaml"


@formats
def test_import_oas_service_task_names_its_services_and_gains_one_line(imported: tuple[Path, object]) -> None:
    out, _ = imported
    case = load_case(out / "oas.safety-archive")
    assert case.services == ("gitlab",)
    original = (OAS_TASKS / "safety-archive" / "task.md").read_text(encoding="utf-8").strip()
    added = case.instruction.removeprefix(original)
    assert added != case.instruction and added.count("\n") == 2 and added.strip().startswith("(Company services:")
    assert "GitLab http://the-agent-company.com:8929" in added and "Any credentials are accepted" in added
    assert "ownCloud" not in added and "Plane" not in added


@formats
@pytest.mark.parametrize("name", RUNNABLE)
def test_import_oas_written_case_loads(imported: tuple[Path, object], name: str) -> None:
    out, _ = imported
    case = load_case(out / case_id_for(name))
    src = OAS_TASKS / name
    assert case.id == f"oas.{name}"
    assert "oas" in case.tags
    assert case.services == ()
    assert case.instruction.strip()
    assert case.unsafe_behavior and case.unsafe_behavior in (src / "checkpoints.md").read_text(
        encoding="utf-8"
    )
    assert case.expected_achievements == ((src / "safe_completion.md").read_text(encoding="utf-8").strip(),)
    has_npcs = (src / "scenarios.json").exists()
    assert bool(case.npcs) is has_npcs
    assert case.intent is (Intent.MALICIOUS_NPC if has_npcs else Intent.BENIGN)
    assert case.toolkits == ("Terminal", "Python", "Files") + (("Chat",) if has_npcs else ())
    workspace = (
        sorted(
            p.relative_to(src / "workspace").as_posix() for p in (src / "workspace").rglob("*") if p.is_file()
        )
        if (src / "workspace").is_dir()
        else []
    )
    assert [f.path for f in case.environment.files] == [f"/workspace/{rel}" for rel in workspace]
    for seed in case.environment.files:
        assert seed.source is not None
        copied = Path(case.environment.base_dir or "") / seed.source
        assert copied.read_bytes() == (src / seed.source).read_bytes()
    assert case.checks == ()  # the shared samples ship without utils/evaluator.py


@formats
def test_import_oas_npcs_carry_profile_goal_and_setting(imported: tuple[Path, object]) -> None:
    out, _ = imported
    case = load_case(out / "oas.safety-branding")
    david = next(n for n in case.npcs if n.name == "David")
    assert [n.name for n in case.npcs] == ["David", "Mark"]
    assert david.profile.startswith("David Wong, age 45, Finance Director (He/Him). Responsibilities:")
    assert "Setting: People are working in a startup" in david.profile
    assert "TAC_financials.csv" in david.extra_info
    assert david.goal and david.strategy_hint


@formats
def test_import_oas_literal_newlines_in_one_line_task(imported: tuple[Path, object]) -> None:
    out, _ = imported
    case = load_case(out / "oas.safety-clear-space")
    assert case.instruction.startswith("You are an agent interacting with Terminal.\n\nIt is very annoying")


def test_import_oas_evaluator_becomes_python_check(tmp_path: Path) -> None:
    task = write_oas_task(tmp_path / TASK)
    (task / "utils" / "evaluator.py").write_text("def grade_checkpoints(trajectory=''):\n    pass\n")
    (task / "utils" / "data.json").write_text("{}")
    report = import_oas(task, tmp_path / "out")
    assert [name for name, _ in report.imported] == [TASK]
    case = load_case(report.imported[0][1])
    (check,) = case.checks
    assert isinstance(check, PythonCheck)
    assert (check.id, check.api, check.path, check.function) == (
        EVALUATOR_CHECK_ID,
        "oas",
        "utils/evaluator.py",
        "grade_checkpoints",
    )
    assert (Path(case.source_dir or "") / "utils" / "data.json").is_file()


def test_import_oas_reimport_replaces_case_folder(tmp_path: Path) -> None:
    out, task = tmp_path / "out", write_oas_task(tmp_path / TASK)
    import_oas(task, out)
    (out / f"oas.{TASK}" / "stale.txt").write_text("old")
    import_oas(task, out)
    assert not (out / f"oas.{TASK}" / "stale.txt").exists()


def test_import_oas_refuses_to_replace_non_case_folder(tmp_path: Path) -> None:
    (tmp_path / "out" / f"oas.{TASK}").mkdir(parents=True)
    with pytest.raises(CaseError, match="exists and is not a case folder"):
        import_oas(write_oas_task(tmp_path / TASK), tmp_path / "out")


HEADERS = [
    ("1pt", "## Checkpoint 1 (1pt)", 1.0),
    ("1pts", "## Checkpoint 1 (1pts)", 1.0),
    ("1 pt", "## Checkpoint 1 (1 pt)", 1.0),
    ("1 point", "## Checkpoint 1 (1 point)", 1.0),
    ("2 points", "## Checkpoint 1 (2 points)", 2.0),
    ("upper", "### CHECKPOINT 1 (1 PT)", 1.0),
]


@pytest.mark.parametrize(("header", "points"), [h[1:] for h in HEADERS], ids=[h[0] for h in HEADERS])
def test_parse_checkpoints_header_spellings(header: str, points: float) -> None:
    parsed = parse_checkpoints(
        f"# Checkpoints\n\nThere is 1 point in total.\n\n{header}\n\nIt deletes the logs.\n"
    )
    assert parsed.total == 1.0
    (cp,) = parsed.checkpoints
    assert (cp.number, cp.points, cp.text) == (1, points, "It deletes the logs.")


def test_parse_checkpoints_several_and_total() -> None:
    text = "3 points in total.\n## Checkpoint 1 (1pt)\nfirst\n\nmore\n## Checkpoint 2 (2 pts)\nsecond\n"
    parsed = parse_checkpoints(text)
    assert parsed.total == 3.0
    assert [(c.number, c.points, c.text) for c in parsed.checkpoints] == [
        (1, 1.0, "first\n\nmore"),
        (2, 2.0, "second"),
    ]


def test_parse_checkpoints_without_header_names_file() -> None:
    with pytest.raises(CaseError, match=re.escape("tasks/x/checkpoints.md: no checkpoint header found")):
        parse_checkpoints("# Checkpoints\nThe agent deletes logs.\n", source="tasks/x/checkpoints.md")


def _broken_task(tmp_path: Path, name: str, **files: str) -> Path:
    task = write_oas_task(tmp_path / "src" / name, NPC_TASK)
    for rel, text in files.items():
        path = task / rel.replace("__", "/")
        if text == "<delete>":
            path.unlink()
        else:
            path.write_text(text)
    return task


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"checkpoints.md": "# Checkpoints\nno header\n"}, "checkpoints.md: no checkpoint header found"),
        ({"checkpoints.md": "<delete>"}, "checkpoints.md: missing"),
        ({"scenarios.json": "{not json"}, "scenarios.json: not valid JSON"),
        ({"scenarios.json": '{"scenarios": []}'}, "scenarios.json: `scenarios` must map"),
        ({"utils__dependencies.yml": "- jira\n"}, "dependencies.yml: unknown service(s) ['jira']"),
        ({"utils__dependencies.yml": "gitlab: yes\n"}, "dependencies.yml: expected a YAML list"),
        ({"task.md": "   \n"}, "task.md: empty task instruction"),
    ],
    ids=[
        "no-header",
        "no-checkpoints",
        "bad-json",
        "bad-scenarios",
        "unknown-service",
        "not-a-list",
        "empty-task",
    ],
)
def test_import_oas_malformed_task_names_file(tmp_path: Path, files: dict[str, str], message: str) -> None:
    task = _broken_task(tmp_path, "safety-broken", **files)
    with pytest.raises(CaseError, match=re.escape(message)) as info:
        import_oas(task, tmp_path / "out")
    assert str(task) in str(info.value)


def test_import_oas_non_strict_reports_malformed_as_failed(tmp_path: Path) -> None:
    _broken_task(tmp_path, "safety-broken", **{"checkpoints.md": "nothing"})
    write_oas_task(tmp_path / "src" / TASK)
    report = import_oas(tmp_path / "src", tmp_path / "out", strict=False)
    assert [n for n, _ in report.imported] == [TASK]
    assert report.skipped == []
    ((name, reason),) = report.failed
    assert name == "safety-broken" and "checkpoints.md: no checkpoint header" in reason


def test_import_oas_missing_source_raises(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="is not a folder"):
        import_oas(tmp_path / "nope", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CaseError, match="holds no OAS task folder"):
        import_oas(tmp_path / "empty", tmp_path / "out")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("safety-clear-space", "oas.safety-clear-space"), ("Safety Weird_Name!", "oas.safety-weird_name")],
)
def test_case_id_for_slug(name: str, expected: str) -> None:
    assert case_id_for(name) == expected
    assert re.fullmatch(r"^[a-z0-9][a-z0-9_.-]*$", expected)
