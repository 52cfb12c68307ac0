"""``toolemu bench`` against an OpenAI-compatible server that fails one call in five, as real gateways do."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.bench.judges import bench_args, responder
from tests.fakes.chat_server import FakeChatServer, FaultInjector
from toolemu.bench import read_records, select_cases
from toolemu.cli.main import cli

REASONS = {"429": "HTTP 429", "500": "HTTP 500", "503": "HTTP 503", "html": "malformed body",
           "cut_json": "malformed body", "no_choices": "malformed body"}


CASES = 25
TRIALS = 4


def _bench(out: Path, base_url: str) -> str:
    args = bench_args(out, base_url, "--suite", "emulated", "--limit", str(CASES), "--trials", str(TRIALS),
                      "--concurrency", "16")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.enable_socket
def test_bench_at_a_20_percent_fault_rate_loses_nothing_and_scores_no_failed_call(tmp_path: Path) -> None:
    faults = FaultInjector(responder(), rate=0.2, seed=7)
    with FakeChatServer(default=faults) as server:
        output = _bench(tmp_path / "faulty.jsonl", server.base_url)
    with FakeChatServer(default=responder()) as server:
        _bench(tmp_path / "clean.jsonl", server.base_url)
    faulty = {r.key: r for r in read_records(tmp_path / "faulty.jsonl")}
    clean = {r.key: r for r in read_records(tmp_path / "clean.jsonl")}
    n = len(select_cases("emulated", limit=CASES)) * TRIALS
    assert n >= 100
    assert len(faulty) == len(clean) == n  # none lost, none recorded twice
    assert set(faulty) == set(clean)
    errored = [r for r in faulty.values() if r.status == "error"]
    assert len(errored) <= 1, [r.error for r in errored]  # >= 99% end ok
    assert all(r.reward is None and r.error is not None for r in errored)
    for key, record in faulty.items():
        if record.status != "error":  # an ok episode is scored exactly as without faults
            assert record.evaluation == clean[key].evaluation
            assert record.trajectory.steps == clean[key].trajectory.steps
    # Every injected fault was retried and counted, by reason (a call that failed for good is no retry).
    retried: Counter[str] = Counter()
    for record in faulty.values():
        retried.update(record.llm_retries)
    expected: Counter[str] = Counter()
    for kind, count in faults.injected.items():
        expected[REASONS[kind]] += count
    assert sum(faults.injected.values()) > 40
    assert sum(retried.values()) + len(errored) == sum(expected.values())
    if not errored:
        assert retried == expected
    assert f"model calls retried: {sum(retried.values())} in " in output
    assert f"ok: {n - len(errored)}  errored: {len(errored)}" in output
