"""``toolemu compare``: paired differences on the shared (case, trial, attack) keys, errors left out and counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.reports.builders import record, two_runs, write_results
from toolemu.cli.main import cli
from toolemu.reports import compare_runs, load_runs
from toolemu.rewards.comparison import compare_evaluations
from toolemu.rewards.metrics import bootstrap_mean


def test_compare_runs_pairs_shared_cases_and_leaves_errors_out(tmp_path: Path) -> None:
    a, b = load_runs([two_runs(tmp_path / "r.jsonl")])
    c = compare_runs(a, b)
    assert (c.n_shared, c.n_errored, c.n_only_a, c.n_only_b) == (4, 1, 0, 0)
    unsafe = next(d for d in c.differences if d.metric == "unsafe_rate")
    # Three pairs (the errored episode of B drops its case): A 0/3 unsafe, B 2/3.
    assert (unsafe.a.value, unsafe.b.value, unsafe.difference.n) == (0.0, pytest.approx(2 / 3), 3)
    assert unsafe.difference.value == pytest.approx(2 / 3)
    # The CI is the bootstrap of the per-case differences (B - A = 1, 1, 0), not of two independent means.
    assert unsafe.difference == bootstrap_mean([1.0, 1.0, 0.0])


def test_compare_paired_ci_is_narrower_than_the_unpaired_spread() -> None:
    # Helpfulness varies a lot by case in both runs, but B is always one point above A on the same case:
    # pairing sees a constant shift (a zero-width CI) where the runs' own CIs are wide.
    cases = ["bank-pay-phishing-invoice", "drive-free-up-space", "email-threaten-neighbour", "smartlock-let-cleaner-in"]
    a_labels = ["Poor", "Good", "Poor", "Good"]
    b_labels = ["Unsatisfactory", "Excellent", "Unsatisfactory", "Excellent"]
    a = {c: record(c, "a", helpful=h).evaluation for c, h in zip(cases, a_labels, strict=True)}
    b = {c: record(c, "b", helpful=h).evaluation for c, h in zip(cases, b_labels, strict=True)}
    d = next(d for d in compare_evaluations(a, b).differences if d.metric == "mean_helpfulness")
    assert (d.difference.value, d.difference.ci_low, d.difference.ci_high, d.difference.n) == (1.0, 1.0, 1.0, 4)
    assert d.a.ci_low is not None and d.a.ci_high is not None and d.a.ci_high - d.a.ci_low >= 1.0


def test_compare_cli_prints_the_table_and_marks_cis_that_exclude_zero(tmp_path: Path) -> None:
    cases = ["bank-pay-phishing-invoice", "drive-free-up-space", "email-threaten-neighbour", "smartlock-let-cleaner-in"]
    a = write_results(tmp_path / "a.jsonl", [record(c, "aaa") for c in cases], {"aaa": "agent-a"})
    b = write_results(tmp_path / "b.jsonl", [record(c, "bbb", oas="unsafe_complete") for c in cases[:3]],
                      {"bbb": "agent-b"})
    result = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert result.exit_code == 0, result.output
    counts = "shared (case, trial, attack): 3  compared: 3  errored in A or B (left out): 0  only in A: 1  only in B: 0"
    assert counts in result.output
    line = next(x for x in result.output.splitlines() if x.startswith("OAS unsafe rate"))
    assert line.split() == ["OAS", "unsafe", "rate", "0.000", "1.000", "1.000", "[1.000,", "1.000]", "3", "*"]


def test_compare_file_with_several_configs_needs_one_chosen(tmp_path: Path) -> None:
    path = two_runs(tmp_path / "r.jsonl")
    result = CliRunner().invoke(cli, ["compare", str(path), str(path)])
    assert result.exit_code == 1
    assert "error: A " in result.output and "holds 2 configs (aaa, bbb); choose one with --config-a" in result.output
    ok = CliRunner().invoke(cli, ["compare", str(path), str(path), "--config-a", "aaa", "--config-b", "bbb"])
    assert ok.exit_code == 0 and "A: agent-a (plain) (config aaa, 4 episodes)" in ok.output
