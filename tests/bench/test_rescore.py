"""``toolemu rescore``: saved episodes re-judged and their rule checks re-run, into a new file, no agent run."""

from __future__ import annotations

import shutil
import time
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.bench.judges import STRICT, bench_args, model_args, responder
from tests.bench.judges import invoke_ok as _invoke
from tests.fakes.chat_server import FakeChatServer
from toolemu.bench import read_records
from toolemu.cli.main import cli

DATA = Path(str(resources.files("toolemu.testcases").joinpath("data")))
CASES = ("smartlock-let-cleaner-in.yaml", "email-threaten-neighbour.yaml")




def _rescore(results: Path, out: Path, base_url: str, *extra: str) -> str:
    return _invoke(
        [
            "rescore",
            str(results),
            "--out",
            str(out),
            "--judge-model",
            "m2",
            "--base-url",
            base_url,
            "--api-key",
            "k",
            *extra,
        ]
    )


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in CASES:
        shutil.copy(DATA / "emulated" / name, folder / name)
    shutil.copytree(DATA / "real" / "python-outliers-are-real-data", folder / "python-outliers-are-real-data")
    return folder


@pytest.mark.sandbox
@pytest.mark.enable_socket
def test_rescore_replaces_judge_verdicts_and_keeps_rule_verdicts(tmp_path: Path, suite: Path) -> None:
    results, rescored = tmp_path / "results.jsonl", tmp_path / "rescored.jsonl"
    began = time.time()
    with FakeChatServer(default=responder()) as server:
        _invoke(bench_args(results, server.base_url, "--suite", str(suite)))
    ended = time.time()
    before = results.read_bytes()
    with FakeChatServer(default=responder(STRICT)) as judge:
        output = _rescore(results, rescored, judge.base_url)
        requests = judge.chat_requests
    assert requests and all(isinstance(r.body.get("response_format"), dict) for r in requests)  # judges only
    assert {r.body["model"] for r in requests} == {"m2"}
    assert results.read_bytes() == before  # the original file is untouched
    old, new = list(read_records(results)), list(read_records(rescored))
    assert [r.key[0::3] for r in old] == [r.key[0::3] for r in new]
    for a, b in zip(old, new, strict=True):
        assert a.evaluation is not None and b.evaluation is not None
        assert a.evaluation.rules == b.evaluation.rules  # python check included: scored from the capture
        assert [v.label for v in a.evaluation.safety] == ["Certain No Risk"]
        assert [v.label for v in b.evaluation.safety] == ["Likely Severe Risk"]
        assert b.evaluation.helpfulness is not None and b.evaluation.helpfulness.label == "Poor"
        assert (a.reward, b.reward) == (1.0, -1.0)
        assert a.trajectory == b.trajectory and a.final_state == b.final_state and a.checks == b.checks
        assert a.config_hash != b.config_hash and a.case_hash == b.case_hash
        assert a.finished_at is not None and began <= a.finished_at <= ended  # when the episode ended
        assert b.finished_at == a.finished_at  # re-scoring does not move it
    assert any(r.checks for r in new)  # the native python check's captured result travelled with the record
    assert "episodes: 3  ok: 3  errored: 0" in output


@pytest.mark.enable_socket
def test_rescore_reads_a_run_out_record(tmp_path: Path) -> None:
    episode, rescored = tmp_path / "episode.json", tmp_path / "rescored.jsonl"
    with FakeChatServer(default=responder()) as server:
        _invoke(["run", "--case", "smartlock-let-cleaner-in", *model_args(server.base_url), "--out", str(episode)])
    with FakeChatServer(default=responder(STRICT)) as judge:
        _rescore(episode, rescored, judge.base_url)
    (old,), (new,) = read_records(episode), read_records(rescored)
    assert old.evaluation is not None and new.evaluation is not None
    assert old.evaluation.rules == new.evaluation.rules
    assert new.evaluation.safety[0].label == "Likely Severe Risk" and new.reward == -1.0


@pytest.mark.enable_socket
def test_rescore_rules_only_calls_no_model(tmp_path: Path) -> None:
    results, rescored = tmp_path / "results.jsonl", tmp_path / "rescored.jsonl"
    with FakeChatServer(default=responder()) as server:
        _invoke(bench_args(results, server.base_url, "--case", "smartlock-let-cleaner-in"))
    output = _invoke(["rescore", str(results), "--out", str(rescored), "--rules-only"])
    (record,) = read_records(rescored)
    assert record.evaluation is not None and record.evaluation.scope == "rules"
    assert record.evaluation.safety == () and record.reward == 0.0
    assert "rule checks unsafe" in output


def test_rescore_never_overwrites(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text("")
    result = CliRunner().invoke(cli, ["rescore", str(results), "--out", str(results), "--rules-only"])
    assert result.exit_code == 1 and "already exists" in result.output and "Traceback" not in result.output


@pytest.mark.enable_socket
def test_rescore_names_the_new_run_after_the_run_it_came_from(tmp_path: Path) -> None:
    from toolemu.bench.run_info import load_run_info

    results, rescored = tmp_path / "results.jsonl", tmp_path / "rescored.jsonl"
    with FakeChatServer(default=responder()) as server:
        _invoke(bench_args(results, server.base_url, "--case", "smartlock-let-cleaner-in"))
    with FakeChatServer(default=responder(STRICT)) as judge:
        _rescore(results, rescored, judge.base_url)
    (old_hash, old), = load_run_info(results).items()
    (new_hash, new), = load_run_info(rescored).items()
    assert new_hash == next(iter(read_records(rescored))).config_hash != old_hash
    assert (new.agent, new.variant, new.judge) == (old.agent, "plain, re-judged by openai:m2", "openai:m2")
    assert new.description["rescored_from"] == old_hash
