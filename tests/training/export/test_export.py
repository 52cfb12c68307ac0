"""``toolemu export``: SFT conversations and DPO pairs from a bench results file, loaded with ``datasets``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fakes.models import world_model
from tests.prerequisites import needs
from toolemu.agents import ScriptedAgent, system_prompt, tool_call_text
from toolemu.bench import append_record, run_episode
from toolemu.cli.main import cli
from toolemu.envs import ToolEmuEnv
from toolemu.llm import FakeLLM
from toolemu.testcases import load_case

CASE = "smartlock-let-cleaner-in"
LONE = "email-send-colleague-address"  # only a safe episode: no pair
REFUSAL = "Thought: risky.\nFinal Answer: I won't touch the lock settings."


def _actions(case_id: str, label: str) -> list[str]:
    run = next(r for r in load_case(case_id).reference_runs if r.label == label)
    return [a if isinstance(a, str) else tool_call_text(a) for a in run.actions]


def _episode(out: Path, case_id: str, actions: list[str], helpfulness: str, *, broken: bool = False) -> None:
    judges = {"ToolEmuSafetyOutput": "Certain No Risk", "HelpfulnessOutput": helpfulness}
    failing = FakeLLM([], name="down")  # any call raises LLMBackendError
    model = world_model(judges, emulator=(lambda m, p: failing.chat(m, p).text) if broken else None)
    env = ToolEmuEnv(case_id, emulator_model=model, judge_model=model)
    try:
        append_record(out, run_episode(env, ScriptedAgent(actions), seed=0, config_hash="h", trial=len(
            out.read_text().splitlines()) if out.exists() else 0))
    finally:
        env.close()


@pytest.fixture
def results(tmp_path: Path) -> Path:
    out = tmp_path / "results.jsonl"
    _episode(out, CASE, _actions(CASE, "safe"), "Excellent")  # safe and helpful: SFT, DPO chosen
    _episode(out, CASE, _actions(CASE, "unsafe"), "Excellent")  # a rule check fires: DPO rejected
    _episode(out, CASE, [REFUSAL], "Poor")  # safe, not helpful: neither SFT nor (outranked) chosen
    _episode(out, CASE, _actions(CASE, "safe"), "Excellent", broken=True)  # errored: skipped, counted
    _episode(out, LONE, _actions(LONE, "safe"), "Good")  # SFT; no unsafe episode to pair with
    return out


def test_export_writes_sft_and_dpo_files_that_datasets_loads_in_trl_formats(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # read at import: the Hub is never asked
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    import datasets

    sft, dpo = tmp_path / "sft.jsonl", tmp_path / "dpo.jsonl"
    result = CliRunner().invoke(cli, ["export", str(results), "--sft", str(sft), "--dpo", str(dpo)])
    assert result.exit_code == 0, result.output
    assert "records: 5  errored (skipped): 1  safe and helpful: 2" in result.output
    assert f"cases without a safe/unsafe pair: {LONE}" in result.output

    sft_set = datasets.load_dataset("json", data_files=str(sft), split="train")
    assert sft_set.column_names == ["messages"] and sft_set.num_rows == 2
    first = sft_set[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert first[0]["content"] == system_prompt("plain")
    assert load_case(CASE).instruction in first[1]["content"] and "SmartLockGrantAccess" in first[1]["content"]
    assert first[2]["content"] == _actions(CASE, "safe")[0]
    assert first[3]["content"].startswith("Observation: ")
    assert '"permanent": false' in first[4]["content"]

    dpo_set = datasets.load_dataset("json", data_files=str(dpo), split="train")
    assert sorted(dpo_set.column_names) == ["chosen", "prompt", "rejected"] and dpo_set.num_rows == 1
    pair = dpo_set[0]
    assert [m["role"] for m in pair["prompt"]] == ["system", "user"]
    assert pair["chosen"][0]["role"] == pair["rejected"][0]["role"] == "assistant"
    assert '"permanent": false' in pair["chosen"][2]["content"]
    assert '"permanent": true' in pair["rejected"][2]["content"]


@needs(modules=("trl",), install="pip install -e '.[training]'")
def test_export_rows_are_conversational_for_trl(results: Path, tmp_path: Path) -> None:
    from trl import data_utils as trl_data
    sft, dpo = tmp_path / "sft.jsonl", tmp_path / "dpo.jsonl"
    assert CliRunner().invoke(cli, ["export", str(results), "--sft", str(sft), "--dpo", str(dpo)]).exit_code == 0
    rows = [json.loads(line) for path in (sft, dpo) for line in path.read_text().splitlines()]
    assert len(rows) == 3 and all(trl_data.is_conversational(row) for row in rows)


def test_export_never_overwrites_and_writes_nothing_when_one_output_exists(results: Path, tmp_path: Path) -> None:
    sft, dpo = tmp_path / "sft.jsonl", tmp_path / "dpo.jsonl"
    dpo.write_text("keep me\n")
    result = CliRunner().invoke(cli, ["export", str(results), "--sft", str(sft), "--dpo", str(dpo)])
    assert result.exit_code == 1 and "--dpo" in result.output and "exists" in result.output
    assert not sft.exists() and dpo.read_text() == "keep me\n"
    result = CliRunner().invoke(cli, ["export", str(results)])
    assert result.exit_code == 1 and "error: export needs an output" in result.output


def test_export_rejects_a_corrupt_results_line_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"case_id": "x"}) + "\n")
    result = CliRunner().invoke(cli, ["export", str(bad), "--sft", str(tmp_path / "s.jsonl")])
    assert result.exit_code == 1 and f"{bad}:1" in result.output
