"""``toolemu run`` and ``toolemu bench`` end to end through the real openai client against a local server."""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.fakes.chat_server import FakeChatServer, RecordedRequest, ScriptedReply
from tests.fakes.models import JUDGED_CHECK_TITLE, fill, judged_reply
from toolemu.bench import read_records
from toolemu.cli.main import cli
from toolemu.testcases import load_case

CASE = "smartlock-let-cleaner-in"
VERDICTS = {"ToolEmuSafetyOutput": "Certain No Risk", "HelpfulnessOutput": "Excellent"}


def _responder(agent_replies: list[str]) -> object:
    """Routes each request by its role: agent (no schema), judge (titled verdict schema), emulator (other)."""
    script = deque(agent_replies)

    def respond(request: RecordedRequest) -> ScriptedReply:
        fmt = request.body.get("response_format")
        if not isinstance(fmt, dict):
            return ScriptedReply(text=script.popleft() if script else "Final Answer: done")
        schema = fmt["json_schema"]["schema"]
        title = schema.get("title")
        if title in VERDICTS:
            return ScriptedReply(text=json.dumps({"rationale": "fine", "label": VERDICTS[title]}))
        if title == JUDGED_CHECK_TITLE:
            return ScriptedReply(text=judged_reply("no"))
        return ScriptedReply(text=json.dumps({"notes": "n", "observation": fill(schema["properties"]["observation"])}))

    return respond


def _safe_actions() -> list[str]:
    run = next(r for r in load_case(CASE).reference_runs if r.label == "safe")
    return [a for a in run.actions if isinstance(a, str)]


@pytest.mark.enable_socket
def test_run_prints_trajectory_scores_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "episode.json"
    with FakeChatServer(default=_responder(_safe_actions())) as server:  # type: ignore[arg-type]
        result = CliRunner().invoke(
            cli,
            ["run", "--case", CASE, "--agent-model", "m", "--emulator-model", "m", "--judge-model", "m",
             "--base-url", server.base_url, "--api-key", "k", "--out", str(out)],
        )
    assert result.exit_code == 0, result.output
    assert "SmartLockGrantAccess" in result.output and "Certain No Risk" in result.output
    record = json.loads(out.read_text())
    assert record["status"] == "completed" and record["reward"] > 0
    verdicts = record["evaluation"]["verdicts"]  # by scorer name (evaluation shape 2)
    rules = verdicts["rules"]
    # No rule check found harm; the case's judged checks were asked and answered no.
    assert rules["unsafe"] is False or (rules["undecided"] and rules["unsafe"] is None)
    answers = verdicts["judged_check"]["answers"] if "judged_check" in verdicts else []
    assert all(v["answer"] == "no" for v in answers)
    assert "judged check " in result.output or not answers


@pytest.mark.enable_socket
@pytest.mark.parametrize("quiet", [False, True])
def test_run_progress_line_per_step_on_stderr(quiet: bool) -> None:
    actions = _safe_actions()
    with FakeChatServer(default=_responder(actions)) as server:  # type: ignore[arg-type]
        result = CliRunner().invoke(
            cli,
            ["run", "--case", CASE, "--agent-model", "m", "--emulator-model", "m", "--judge-model", "m",
             "--base-url", server.base_url, "--api-key", "k", *(["--quiet"] if quiet else [])],
        )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("step ")]
    if quiet:
        assert lines == []
        return
    assert len(lines) == len(actions)
    assert lines[0].startswith("step 1/") and "tool SmartLock" in lines[0]
    assert lines[-1].startswith(f"step {len(actions)}/") and "final" in lines[-1]
    assert lines[-1].endswith("-> completed (evaluation included)")
    assert all("running" not in line for line in lines)


@pytest.mark.enable_socket
def test_run_backend_failure_is_reported_as_error(tmp_path: Path) -> None:
    with FakeChatServer(default=ScriptedReply(status=401, error_message="bad key")) as server:
        result = CliRunner().invoke(
            cli, ["run", "--case", CASE, "--agent-model", "m", "--emulator-model", "m", "--judge-model", "m",
                  "--base-url", server.base_url, "--api-key", "k"],
        )
    assert result.exit_code == 2
    assert "ERROR at agent" in result.output and "reward: none (not scored)" in result.output


def test_run_unknown_case_is_one_line_error() -> None:
    result = CliRunner().invoke(cli, ["run", "--case", "smartlock-let-cleaner", "--agent-model", "fake:x"])
    assert result.exit_code == 1
    assert "Did you mean `smartlock-let-cleaner-in`?" in result.output
    assert "Traceback" not in result.output


@pytest.mark.enable_socket
def test_bench_writes_records_resumes_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    args = ["bench", "--case", CASE, "--case", "bank-pay-phishing-invoice", "--agent-model", "m",
            "--emulator-model", "m", "--judge-model", "m", "--api-key", "k", "--out", str(out)]
    with FakeChatServer(default=_responder(["Final Answer: I will not do that without checking."] * 4)) as server:
        first = CliRunner().invoke(cli, [*args, "--base-url", server.base_url])
        assert first.exit_code == 0, first.output
        n_requests = len(server.chat_requests)
        second = CliRunner().invoke(cli, [*args, "--base-url", server.base_url])
        assert second.exit_code == 0, second.output
        assert len(server.chat_requests) == n_requests  # resumed: nothing re-run
    records = list(read_records(out))
    assert sorted(r.case_id for r in records) == sorted([CASE, "bank-pay-phishing-invoice"])
    assert "ToolEmu mean safety" in first.output and "n=2" in first.output
    report = CliRunner().invoke(cli, ["report", str(out)])
    assert report.exit_code == 0 and "ToolEmu mean safety" in report.output


@pytest.mark.enable_socket
@pytest.mark.parametrize("label", ["safe", "unsafe"])
def test_run_npc_case_through_openai_client(tmp_path: Path, label: str) -> None:
    case = load_case("npc-share-api-key")
    actions = [a for a in next(r for r in case.reference_runs if r.label == label).actions if isinstance(a, str)]
    script = deque(actions)

    def respond(request: RecordedRequest) -> ScriptedReply:
        if request.body.get("model") == "npc":  # the NPC role: its own system prompt, in character
            system = request.body["messages"][0]["content"]  # type: ignore[index]
            assert "<<<PROFILE>>>\nLeo." in system and "sk-live" not in system
            return ScriptedReply(text="Leo: The release is tonight, I really need it.")
        return ScriptedReply(text=script.popleft() if script else "Final Answer: done")

    out = tmp_path / "episode.json"
    with FakeChatServer(default=respond) as server:
        result = CliRunner().invoke(
            cli, ["run", "--case", case.id, "--agent-model", "agent", "--npc-model", "npc", "--evaluate", "rules",
                  "--base-url", server.base_url, "--api-key", "k", "--out", str(out)],
        )
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["evaluation"]["verdicts"]["rules"]["unsafe"] is (label == "unsafe")
    replies = [m for m in record["final_state"]["messages"] if m["direction"] == "from_npc"]
    assert [m["content"] for m in replies] == ["The release is tonight, I really need it."] * 2
