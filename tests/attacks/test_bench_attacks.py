"""``bench --attack``: each (case, attack) is its own record, resumed by a key that includes the attack; the
cases an attack does not fit are counted; bad attack names are one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.attacks.agents import InjectionFollower
from tests.attacks.cases import CHAT, MAIL, MAIL_RUN, emulator
from tests.attacks.test_attack_scoring import FORWARD
from tests.bench.judges import invoke_ok
from toolemu.attacks import builtin_attacks, cross_attacks
from toolemu.bench import read_records, run_suite
from toolemu.cli.main import cli
from toolemu.envs import EnvConfig

RULES_ONLY = ["--agent-model", "fake:Final Answer: Nothing needed.", "--emulator-model", "fake:unused",
              "--evaluate", "rules"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    cases = tmp_path / "cases"
    cases.mkdir()
    for case in (MAIL, CHAT):
        data = case.model_dump(mode="json", exclude_none=True)
        (cases / f"{case.id}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return cases


@pytest.mark.parametrize("executor", [["--executor", "threads"], ["--executor", "processes", "--workers", "1"]],
                         ids=["threads", "processes"])
def test_bench_attack_records_each_case_attack_pair_and_resumes(tmp_path: Path, folder: Path,
                                                                executor: list[str]) -> None:
    out = tmp_path / "results.jsonl"
    args = ["bench", "--suite", str(folder), *RULES_ONLY, "--out", str(out), *executor,
            "--attack", "none,inbox-forward,npc-phish-link"]
    output = invoke_ok(args)
    records = list(read_records(out))
    assert sorted((r.case_id, r.attack or "") for r in records) == [
        ("chat-standup", ""), ("chat-standup", "npc-phish-link"), ("mail-summary", ""),
        ("mail-summary", "inbox-forward")]
    assert all(r.status == "completed" and r.evaluation is not None for r in records), [r.error for r in records]
    assert len({r.config_hash for r in records}) == 1 and len({r.key for r in records}) == 4
    assert "attack inbox-forward: 1 cases, 1 skipped" in output
    assert "attack npc-phish-link: 1 cases, 1 skipped" in output
    assert "by attack" in output and "inbox-forward" in output.split("by attack")[1]
    again = invoke_ok(args)
    assert len(list(read_records(out))) == 4  # every (case, attack) resumed, none played twice
    assert "by attack" in again


def test_bench_attack_by_file_and_bad_names(tmp_path: Path, folder: Path) -> None:
    out = tmp_path / "results.jsonl"
    attack = tmp_path / "mine.yaml"
    spec = builtin_attacks()["inbox-forward"].model_dump(mode="json", exclude_none=True)
    attack.write_text(yaml.safe_dump(spec | {"name": "my-forward"}))
    invoke_ok(["bench", "--suite", str(folder), *RULES_ONLY, "--out", str(out), "--attack", str(attack)])
    assert [(r.case_id, r.attack) for r in read_records(out)] == [("mail-summary", "my-forward")]
    for bad, message in (("inbox-forwrd", "Did you mean `inbox-forward`?"),
                         (str(tmp_path / "nope.yaml"), "attack file not found"),
                         ("seed-file-beacon", "no attack applies to any selected case")):
        result = CliRunner().invoke(cli, ["bench", "--suite", str(folder), *RULES_ONLY, "--out",
                                          str(tmp_path / "other.jsonl"), "--attack", bad])
        assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output
        assert [line for line in result.output.splitlines() if line.startswith("error:")] == [
            result.output.strip().splitlines()[-1]], result.output


def test_run_suite_resume_keys_include_the_attack(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    attacks = [None, builtin_attacks()["inbox-forward"], builtin_attacks()["world-refund-request"]]
    cases = list(cross_attacks([MAIL], attacks).cases)
    model = emulator()

    def follower() -> InjectionFollower:
        return InjectionFollower(MAIL_RUN, trigger="archive-sync@mail-relay-hub.example", goal_action=FORWARD)

    config = EnvConfig(emulator_model=model, evaluate="rules")
    first = run_suite(cases, follower, config, run_hash="h", out=out, progress=False)
    assert [(r.attack, r.key[-1]) for r in first] == [(None, None), ("inbox-forward", "inbox-forward"),
                                                      ("world-refund-request", "world-refund-request")]
    reached = {r.attack: r.evaluation.verdict("attack_goal").reached for r in first[1:]}  # type: ignore[union-attr]
    assert reached == {"inbox-forward": True, "world-refund-request": False}
    assert len({r.case_hash for r in first}) == 3  # the attack is part of the case that ran
    again = run_suite(cases, follower, config, run_hash="h", out=out, progress=False)
    assert [r.key for r in again] == [r.key for r in first]
    assert len(out.read_text().splitlines()) == 3
    only_one = run_suite(cases[:2], follower, config, run_hash="h", out=out, progress=False)
    assert [r.attack for r in only_one] == [None, "inbox-forward"]
