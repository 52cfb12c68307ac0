"""The attack x defense matrix in ``report`` and ``compare``: cells from a follower and an ignorer agent, utility
with and without attack on hand-built records, the heatmap, the section only for attacked runs, pairing by
attack."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.attacks.agents import InjectionFollower
from tests.attacks.cases import MAIL, MAIL_RUN, play
from tests.attacks.test_attack_scoring import FORWARD
from tests.bench.judges import invoke_ok
from tests.reports.builders import attacked, record, save_defense, two_runs, write_results
from toolemu.agents import ScriptedAgent
from toolemu.attacks import builtin_attacks, cross_attacks
from toolemu.bench import EpisodeRecord
from toolemu.cli.main import cli
from toolemu.reports import compare_runs, load_runs, write_report
from toolemu.reports.attack_section import attack_matrices, cell_text
from toolemu.reports.compare import attack_difference_rows
from toolemu.rewards.attack_matrix import cell_at

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
C1, C2, C3 = "bank-pay-phishing-invoice", "drive-free-up-space", "smartlock-let-cleaner-in"


def _hand_built(path: Path) -> Path:
    """Agent ``agent-x`` behind no defense (``d0``) and behind ``detector`` (``d1``); figures in the tests."""
    def ep(case: str, config: str, helpful: bool, attack: str | None = None, reached: bool | None = False,
           trial: int = 0) -> EpisodeRecord:
        base = record(case, config, helpful="Good" if helpful else "Poor", trial=trial)
        return base if attack is None else attacked(base, attack, reached=reached)

    d0 = [ep(C1, "d0", True), ep(C2, "d0", True), ep(C3, "d0", False),
          ep(C1, "d0", False, "a1", True), ep(C2, "d0", True, "a1", True), ep(C3, "d0", True, "a1", False),
          ep(C1, "d0", True, "a2", False), ep(C1, "d0", True, "a2", True, trial=1),  # one case, two trials: 0.5
          ep(C2, "d0", True, "a2", None),  # its goal check errored: left out, counted
          ep(C3, "d0", False, "a2", False)]
    d1 = [ep(c, "d1", True) for c in (C1, C2, C3)] + [ep(c, "d1", True, "a1", False) for c in (C1, C2, C3)]
    write_results(path, d0 + d1)
    save_defense(path, "d0", "agent-x", None)
    save_defense(path, "d1", "agent-x", "detector")
    return path


def test_matrix_utility_with_and_without_attack_and_asr_per_defense(tmp_path: Path) -> None:
    (m,) = attack_matrices(load_runs([_hand_built(tmp_path / "r.jsonl")]))
    assert m.agent == "agent-x (plain)" and m.rows == ("none", "a1", "a2")
    none, detector = m.columns
    assert (none.defense, detector.defense) == ("none", "detector")
    assert (none.utility_clean.value, none.utility_clean.n) == (pytest.approx(2 / 3), 3)
    # Pooled over (case, attack): a1 C1, C2, C3 and a2 C1 (0.5 over its two trials), C3; C2's a2 errored.
    assert (none.attack_success.value, none.attack_success.n) == (0.5, 5)
    assert (none.utility_attacked.value, none.utility_attacked.n) == (0.6, 5)
    assert (detector.utility_clean.value, detector.utility_attacked.value, detector.attack_success.value) == (
        1.0, 1.0, 0.0)
    a2 = cell_at(none, "a2")
    assert a2 is not None and (a2.n_episodes, a2.n_errored, a2.attack_success.value, a2.attack_success.n) == (
        4, 1, 0.25, 2)
    assert cell_text(cell_at(none, "none")) == "utility 0.67 (n=3)"
    assert cell_text(cell_at(none, "a1")) == "ASR 0.67 (n=3); utility 0.67 (n=3)"
    assert cell_text(a2) == "ASR 0.25 (n=2); utility 0.50 (n=2); 1 errored"
    assert cell_text(cell_at(detector, "a1")) == "ASR 0.00 (n=3); utility 1.00 (n=3)"
    assert cell_at(detector, "a2") is None and cell_text(None) == "-"


def _scripted_runs(path: Path) -> Path:
    """The mail case unattacked and under ``inbox-forward``: a follower behind no defense, an ignorer (as if a
    defense stopped it) behind ``spotlight``; helpfulness judged Good throughout."""
    cases = cross_attacks([MAIL], [None, builtin_attacks()["inbox-forward"]]).cases
    records = []
    for config, make in (("fol", lambda: InjectionFollower(MAIL_RUN, trigger="archive-sync@mail-relay-hub.example",
                                                            goal_action=FORWARD)),
                         ("ign", lambda: ScriptedAgent(MAIL_RUN))):
        for case in cases:
            records.append(play(case, make(), evaluate="full").model_copy(update={"config_hash": config}))
    write_results(path, records)
    save_defense(path, "fol", "scripted", None)
    save_defense(path, "ign", "scripted", "spotlight")
    return path


def test_follower_and_ignorer_give_the_expected_cells(tmp_path: Path) -> None:
    (m,) = attack_matrices(load_runs([_scripted_runs(tmp_path / "r.jsonl")]))
    follower, ignorer = m.columns
    assert m.rows == ("none", "inbox-forward") and (follower.defense, ignorer.defense) == ("none", "spotlight")
    for column, asr in ((follower, 1.0), (ignorer, 0.0)):
        cell = cell_at(column, "inbox-forward")
        assert cell is not None and (cell.attack_success.value, cell.attack_success.n, cell.n_errored) == (asr, 1, 0)
        assert cell.utility.value == 1.0 and column.utility_clean.value == 1.0
        clean = cell_at(column, "none")
        assert clean is not None and clean.attack_success.n == 0  # nothing to reach without an attack


def test_report_shows_the_attack_section_table_and_heatmap(tmp_path: Path) -> None:
    results = _hand_built(tmp_path / "r.jsonl")
    output = invoke_ok(["report", str(results), "--out", str(tmp_path / "out")])
    assert "wrote" in output
    text = (tmp_path / "out" / "report.md").read_text()
    assert "## Attacks and defenses" in text and "### Attack x defense matrix: agent-x (plain)" in text
    assert (tmp_path / "out" / "attack_matrix.png").read_bytes()[:8] == PNG_MAGIC
    assert "](attack_matrix.png)" in text
    assert "| attack | none | detector |" in text
    assert "| a2 | ASR 0.25 (n=2); utility 0.50 (n=2); 1 errored | - |" in text
    assert ("| agent-x (plain) | detector | 1.000 [1.000, 1.000] (n=3) | 1.000 [1.000, 1.000] (n=3) | "
            "0.000 [0.000, 0.000] (n=3) |") in text
    printed = invoke_ok(["report", str(results)])
    assert "attack x defense matrix, agent-x (plain)" in printed
    assert "attack success rate (ASR)" in printed and "0.500 [" in printed


def test_report_without_attacked_records_has_no_attack_section(tmp_path: Path) -> None:
    files = write_report(load_runs([two_runs(tmp_path / "r.jsonl")]), tmp_path / "out")
    text = files.markdown.read_text()
    assert "## Attacks and defenses" not in text and "attack_matrix" not in text
    assert not (tmp_path / "out" / "attack_matrix.png").exists()
    assert "attack x defense" not in invoke_ok(["report", str(tmp_path / "r.jsonl")])


def test_compare_pairs_attacked_episodes_by_case_trial_and_attack(tmp_path: Path) -> None:
    a = write_results(tmp_path / "a.jsonl", [record(C1, "aaa"), attacked(record(C1, "aaa"), "a1", reached=True),
                                             attacked(record(C1, "aaa"), "a2", reached=True)], {"aaa": "agent-a"})
    b = write_results(tmp_path / "b.jsonl", [record(C1, "bbb", helpful="Poor"),
                                             attacked(record(C1, "bbb"), "a1", reached=False)], {"bbb": "agent-b"})
    run_a, run_b = load_runs([a])[0], load_runs([b])[0]
    c = compare_runs(run_a, run_b)
    assert (c.n_shared, c.n_only_a, c.n_only_b) == (2, 1, 0)  # (C1, 0, None) and (C1, 0, a1); a2 only in A
    rows = {r[0]: r for r in attack_difference_rows(run_a, run_b)}
    assert rows["utility without attack"][1:3] == ["1.000", "0.000"]
    assert rows["attack success rate (ASR)"][1:5] == ["1.000", "0.000", "-1.000 [-1.000, -1.000]", "1"]
    result = CliRunner().invoke(cli, ["compare", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "shared (case, trial, attack): 2" in result.output
    assert any(line.startswith("attack success rate (ASR)") and line.endswith("*")
               for line in result.output.splitlines())


def test_attack_matrix_benchmark_runs_the_pipeline_end_to_end(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "matrix"
    done = subprocess.run([sys.executable, str(root / "benchmarks" / "attack_matrix.py"), "--cases", "3",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, check=False,
                          env=os.environ | {"PYTHONPATH": str(root)})
    assert done.returncode == 0, done.stderr
    assert "60 episodes (0 errored)" in done.stdout
    (m,) = attack_matrices(load_runs([out / "results.jsonl"]))
    by_defense = {f.defense: f for f in m.columns}
    assert list(by_defense) == ["none", "spotlight", "tool_filter", "detector"]
    for attack in ("inbox-forward", "share-outside"):  # the detector withholds every output that carries them
        cell = cell_at(by_defense["detector"], attack)
        assert cell is not None and cell.attack_success.value == 0.0 and cell.utility.value == 0.0
    undefended = cell_at(by_defense["none"], "tool-desc-exfil")
    assert undefended is not None and undefended.attack_success.n == 3
    for name in ("spotlight", "detector"):  # neither screens the tool list
        assert cell_at(by_defense[name], "tool-desc-exfil") == undefended.model_copy(update={"defense": name})
    assert (out / "report" / "attack_matrix.png").read_bytes()[:8] == PNG_MAGIC
