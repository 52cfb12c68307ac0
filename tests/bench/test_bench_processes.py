"""``toolemu bench --executor processes``: the same records as threads, dead workers replaced, errors typed."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.bench.judges import bench_args, bench_by_executor, responder
from tests.bench.ray_setups import REFUSAL, CrashAlwaysSetup, CrashOnceSetup, RaisingSetup
from tests.fakes.chat_server import FakeChatServer
from toolemu.agents import ReActAgent
from toolemu.bench import run_suite
from toolemu.bench.process_executor import ProcessOptions
from toolemu.cli.main import cli
from toolemu.envs import EnvConfig
from toolemu.llm import FakeLLM
from toolemu.testcases import Case, load_cases

EMULATED_DIR = Path(str(resources.files("toolemu.testcases").joinpath("data", "emulated")))
CASES = ("smartlock-let-cleaner-in", "email-threaten-neighbour", "calendar-cancel-next-week")
DRIVER_CONFIG = EnvConfig(emulator_model=FakeLLM.constant("unused"), evaluate="rules")


@pytest.fixture
def cases_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in CASES:
        shutil.copy(EMULATED_DIR / f"{name}.yaml", folder / f"{name}.yaml")
    return folder


def _refuser() -> ReActAgent:
    return ReActAgent(FakeLLM.constant(REFUSAL))


@pytest.mark.enable_socket
def test_bench_processes_records_equal_thread_pool_records(tmp_path: Path, cases_dir: Path) -> None:
    with FakeChatServer(default=responder()) as server:
        records, outputs = bench_by_executor(tmp_path, server.base_url, cases_dir,
                                             {"threads": (), "processes": ("--workers", "2")})
    threads, procs = records["threads"], records["processes"]
    assert len(threads) == 6 and {r["status"] for r in threads.values()} == {"completed"}
    assert procs == threads  # the workers resolved the same models from the options and played the same episodes
    assert "(config " in outputs["processes"] and "2 worker processes)" in outputs["processes"]
    assert "episodes: 6  ok: 6  errored: 0" in outputs["processes"]


def _cases(cases_dir: Path) -> list[Case]:
    return load_cases(cases_dir)


def test_worker_process_lost_mid_episode_is_replaced_and_the_episode_recorded_once(tmp_path: Path,
                                                                                   cases_dir: Path) -> None:
    cases = _cases(cases_dir)
    marker = tmp_path / "attempts.log"
    setup = CrashOnceSetup(marker=str(marker), crash_instruction=cases[0].instruction)
    out = tmp_path / "results.jsonl"
    records = run_suite(cases, _refuser, DRIVER_CONFIG, run_hash="h", out=out, trials=2, concurrency=2,
                        progress=False, processes=ProcessOptions(setup=setup, workers=2))
    attempts = marker.read_text().split()
    assert len(attempts) == 3  # trial 0 or 1 of the first case killed its worker once, then both trials ran
    assert [(r.case_id, r.trial) for r in records] == [(c.id, t) for c in cases for t in (0, 1)]
    assert all(r.status == "completed" for r in records)
    assert len(out.read_text().splitlines()) == 2 * len(cases)  # the crashed attempt left no record
    again = run_suite(cases, _refuser, DRIVER_CONFIG, run_hash="h", out=out, trials=2, progress=False,
                      processes=ProcessOptions(setup=setup, workers=2))
    assert [r.key for r in again] == [r.key for r in records]  # resume: nothing to play, nothing appended
    assert len(out.read_text().splitlines()) == 2 * len(cases)


def test_episode_that_kills_every_worker_is_an_error_record_not_a_score(tmp_path: Path, cases_dir: Path) -> None:
    cases = _cases(cases_dir)
    setup = CrashAlwaysSetup(marker=str(tmp_path / "unused.log"), crash_instruction=cases[1].instruction)
    records = run_suite(cases, _refuser, DRIVER_CONFIG, run_hash="h", out=tmp_path / "r.jsonl", concurrency=2,
                        progress=False, processes=ProcessOptions(setup=setup, workers=2, max_task_retries=1))
    by_case = {r.case_id: r for r in records}
    lost = by_case[cases[1].id]
    assert lost.status == "error" and lost.reward is None and lost.evaluation is None
    assert lost.error is not None and lost.error.type == "WorkerLost"
    assert "the worker process died (exit code 1) on each of 2 attempt(s)" in lost.error.message
    assert [by_case[c.id].status for c in (cases[0], cases[2])] == ["completed", "completed"]


def test_episode_that_raises_in_a_worker_is_an_error_record_and_the_run_goes_on(tmp_path: Path,
                                                                                  cases_dir: Path) -> None:
    cases = _cases(cases_dir)
    setup = RaisingSetup(marker=str(tmp_path / "unused.log"), crash_instruction=cases[2].instruction)
    out = tmp_path / "r.jsonl"
    records = run_suite(cases, _refuser, DRIVER_CONFIG, run_hash="h", out=out, concurrency=2,
                        progress=False, processes=ProcessOptions(setup=setup, workers=2))
    by_case = {r.case_id: r for r in records}
    raised = by_case[cases[2].id]
    assert raised.status == "error" and raised.reward is None and raised.error is not None
    assert raised.error.boundary == "agent" and raised.error.type == "ZeroDivisionError"
    assert "a bug in the agent" in raised.error.message and "Traceback" in raised.error.traceback
    assert [by_case[c.id].status for c in cases[:2]] == ["completed", "completed"]
    assert len(out.read_text().splitlines()) == len(cases)


def test_bench_workers_without_processes_executor_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, bench_args(tmp_path / "r.jsonl", "http://127.0.0.1:9/v1", "--workers", "2"))
    assert result.exit_code == 1
    assert "error: --workers needs --executor processes" in result.output
    assert not (tmp_path / "r.jsonl").exists()
