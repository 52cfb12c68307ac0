"""``toolemu bench`` end to end through the real CLI: filters, resume, concurrency, errors, retries."""

from __future__ import annotations

import json
import logging
import shutil
from importlib import resources
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.bench.judges import bench_args, responder
from tests.bench.judges import invoke_ok as _invoke
from tests.fakes.chat_server import FakeChatServer
from toolemu.bench import needs_sandbox, read_records
from toolemu.cli.main import cli
from toolemu.testcases import builtin_cases

EMULATED_DIR = Path(str(resources.files("toolemu.testcases").joinpath("data", "emulated")))
RULES_ONLY = [
    "--agent-model",
    "fake:Final Answer: I will not do that.",
    "--emulator-model",
    "fake:unused",
    "--evaluate",
    "rules",
]




def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def two_cases(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in ("smartlock-let-cleaner-in", "email-threaten-neighbour"):
        shutil.copy(EMULATED_DIR / f"{name}.yaml", folder / f"{name}.yaml")
    return folder


# ---- filters ----


@pytest.mark.sandbox
@pytest.mark.parametrize("kind", ["real", "emulated"])
def test_bench_suite_kind_selects_the_cases_of_that_kind(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "results.jsonl"
    selected = [c for c in builtin_cases()
                if (needs_sandbox(c) if kind == "real" else not (needs_sandbox(c) or c.npcs or c.user))]
    assert len(selected) >= 8
    expected = sorted(c.id for c in selected[:8])  # the first eight: the whole suite would be slow here
    output = _invoke(["bench", "--suite", kind, "--limit", "8", *RULES_ONLY, "--out", str(out)])
    records = list(read_records(out))
    assert sorted(r.case_id for r in records) == expected
    assert all(r.status == "completed" and r.reward == 0.0 for r in records), [r.error for r in records]
    assert f"episodes: {len(expected)}  ok: {len(expected)}  errored: 0" in output


def test_bench_suite_that_selects_nothing_is_a_one_line_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["bench", "--suite", str(empty), *RULES_ONLY, "--out", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert "error:" in result.output and "Traceback" not in result.output


# ---- resume ----


@pytest.mark.enable_socket
def test_bench_resume_skips_done_episodes_and_reruns_an_edited_case(tmp_path: Path, two_cases: Path) -> None:
    out = tmp_path / "results.jsonl"
    with FakeChatServer(default=responder()) as server:
        args = bench_args(out, server.base_url, "--suite", str(two_cases))
        _invoke(args)
        first = len(server.chat_requests)
        _invoke(args)
        assert len(server.chat_requests) == first  # resumed: nothing ran
        case_file = two_cases / "email-threaten-neighbour.yaml"
        data = yaml.safe_load(case_file.read_text())
        data["instruction"] += " Be quick."
        case_file.write_text(yaml.safe_dump(data))
        output = _invoke(args)
        assert len(server.chat_requests) > first  # the edited case ran again
    records = list(read_records(out))
    assert [r.case_id for r in records].count("email-threaten-neighbour") == 2
    assert [r.case_id for r in records].count("smartlock-let-cleaner-in") == 1
    assert "episodes: 2  ok: 2" in output  # the stale record is not part of this run


@pytest.mark.enable_socket
def test_bench_resumes_after_a_truncated_last_line(
    tmp_path: Path, two_cases: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "results.jsonl"
    with FakeChatServer(default=responder()) as server:
        args = bench_args(out, server.base_url, "--suite", str(two_cases))
        _invoke(args)
        data = out.read_bytes()
        out.write_bytes(data[: len(data) - 40])  # a crash in the middle of writing the second record
        with caplog.at_level(logging.WARNING, logger="toolemu.bench.record"):
            output = _invoke(args)
    assert "dropped a truncated last line" in caplog.text
    assert "episodes: 2  ok: 2  errored: 0" in output
    lines = _lines(out)
    assert len(lines) == 2 and all(json.loads(line) for line in lines)
    report = _invoke(["report", str(out)])
    assert "episodes: 2" in report


# ---- concurrency ----


@pytest.mark.enable_socket
def test_bench_concurrency_runs_each_episode_once(tmp_path: Path, two_cases: Path) -> None:
    out = tmp_path / "results.jsonl"
    with FakeChatServer(default=responder()) as server:
        output = _invoke(
            bench_args(out, server.base_url, "--suite", str(two_cases), "--trials", "3", "--concurrency", "4")
        )
    records = list(read_records(out))
    assert len(records) == 6 and len({r.key for r in records}) == 6
    assert sorted((r.case_id, r.trial) for r in records) == sorted(
        (c, t) for c in ("smartlock-let-cleaner-in", "email-threaten-neighbour") for t in range(3)
    )
    assert "episodes: 6  ok: 6  errored: 0" in output


# ---- errors ----


@pytest.mark.enable_socket
def test_bench_judge_errors_are_counted_and_retry_errors_reruns_them(tmp_path: Path, two_cases: Path) -> None:
    out = tmp_path / "results.jsonl"
    with FakeChatServer(default=responder(judge_text="no verdict here")) as server:
        output = _invoke(bench_args(out, server.base_url, "--suite", str(two_cases)))
    assert "errored: 2 (error records by boundary: judge" in output
    assert all(r.status == "error" and r.reward is None for r in read_records(out))
    with FakeChatServer(default=responder()) as server:
        args = bench_args(out, server.base_url, "--suite", str(two_cases))
        again = _invoke(args)
        assert server.chat_requests == [] and "errored: 2" in again  # resume alone keeps the errors
        retried = _invoke([*args, "--retry-errors"])
    assert "episodes: 2  ok: 2  errored: 0" in retried
    assert len(_lines(out)) == 4  # append-only: the errored attempts stay in the file
    report = _invoke(["report", str(out)])  # the latest record of each case counts, the retried ones are named
    assert "(2 earlier record(s) superseded" in report and "episodes: 2  ok: 2  errored: 0" in report


def test_bench_case_needing_services_is_an_error_record_not_a_score(tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    folder.mkdir()
    case = yaml.safe_load((EMULATED_DIR / "smartlock-let-cleaner-in.yaml").read_text())
    case["services"] = ["gitlab"]
    (folder / "needs-gitlab.yaml").write_text(yaml.safe_dump(case))
    out = tmp_path / "results.jsonl"
    output = _invoke(["bench", "--suite", str(folder), *RULES_ONLY, "--out", str(out)])
    (record,) = read_records(out)
    assert record.status == "error" and record.reward is None
    assert record.error is not None and "gitlab" in record.error.message
    assert "errored: 1" in output


@pytest.mark.sandbox
def test_bench_summary_counts_swallowed_grader_exceptions(tmp_path: Path) -> None:
    folder = tmp_path / "oas-case"
    (folder / "utils").mkdir(parents=True)
    (folder / "utils" / "evaluator.py").write_text(
        "from scoring import Result, Checkpoint\nfrom common import grader\n"
        "@grader\ndef grade_checkpoint1():\n    return open('/workspace/never-made.txt').read() == 'x'\n"
        "def grade_checkpoints(trajectory=''):\n    return Result([Checkpoint(1, int(grade_checkpoint1()))])\n"
    )
    (folder / "case.yaml").write_text(
        yaml.safe_dump(
            {
                "id": "oas-grader-raises",
                "instruction": "Tidy the workspace.",
                "toolkits": ["Terminal"],
                "checks": [{"kind": "python", "api": "oas", "path": "utils/evaluator.py", "id": "oas-evaluator"}],
            }
        )
    )
    out = tmp_path / "results.jsonl"
    output = _invoke(["bench", "--suite", str(folder), *RULES_ONLY, "--out", str(out)])
    (record,) = read_records(out)
    assert record.status == "completed", record.error
    assert record.evaluation is not None and record.evaluation.rules is not None
    (result,) = record.evaluation.rules.results
    assert result.unsafe is False and result.swallowed[0].startswith("grade_checkpoint1: FileNotFoundError")
    assert "OAS grader exceptions read as False: 1" in output
