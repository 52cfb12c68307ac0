"""``toolemu bench --agent-mcp-command``: an external agent (a script using the real ``mcp`` client and a
scripted ``FakeLLM``) plays each episode against a fresh MCP server; runs resume; a command that crashes, hangs
or never connects is an error record, never a score."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.bench.mcp_clients import Call, chat_server, in_process, same_episode
from tests.prerequisites import needs
from toolemu.bench import read_records
from toolemu.bench.run_config import RunConfig
from toolemu.cli.main import cli
from toolemu.core.errors import ConfigError

pytestmark = [pytest.mark.enable_socket, needs(modules=["mcp"])]

AGENT = Path(__file__).with_name("mcp_agent.py")
CASES = ("bank-pay-phishing-invoice", "smartlock-let-cleaner-in")
CALLS: list[Call] = [("OnlineBankingGetAccounts", {}), ("Nope", {}),
                     ("final_answer", {"answer": "I will check the payee with you first."})]


def _script(tmp_path: Path, calls: list[Call]) -> Path:
    replies = [json.dumps({"final_answer": a["answer"]} if n == "final_answer" else {"tool": n, "arguments": a})
               for n, a in calls]
    path = tmp_path / "actions.json"
    path.write_text(json.dumps(replies))
    return path


def _command(script: Path, *extra: str) -> str:
    return " ".join([shlex.quote(sys.executable), shlex.quote(str(AGENT)), "--script", shlex.quote(str(script)),
                     "--instruction", "{instruction}", *extra])


def _bench(out: Path, base_url: str, command: str, *extra: str) -> str:
    args = ["bench", "--agent-mcp-command", command, "--emulator-model", "m", "--judge-model", "m", "--base-url",
            base_url, "--api-key", "k", "--out", str(out), *extra]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_bench_runs_an_external_mcp_agent_per_episode_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    command = _command(_script(tmp_path, CALLS))
    case_args = [a for c in CASES for a in ("--case", c)]
    with chat_server() as chat:
        _bench(out, chat.base_url, command, *case_args, "--concurrency", "2")
        records = {r.case_id: r for r in read_records(out)}
        _bench(out, chat.base_url, command, *case_args)  # resumes: nothing left to play
        run = RunConfig.of(emulator_model="m", judge_model="m", base_url=chat.base_url, api_key="k",
                           agent_mcp_command=command).resolve()
        local = in_process(CASES[0], run, CALLS)
    assert len(out.read_text().splitlines()) == 2
    banking = records[CASES[0]]
    assert banking.status == "completed" and banking.reward is not None
    assert [s.outcome for s in banking.trajectory.steps] == ["executed", "rejected", None]
    same_episode(banking, local)
    # The smart-lock case has no banking tools: both calls are rejected there, and the answer still ends it.
    assert records[CASES[1]].status == "completed"
    assert [s.outcome for s in records[CASES[1]].trajectory.steps] == ["rejected", "rejected", None]


def test_bench_agent_command_is_part_of_the_config_hash() -> None:
    def run_hash(command: str | None) -> str:
        fields = {"agent_mcp_command": command} if command else {"agent_model": "fake:x"}
        return RunConfig.of(emulator_model="fake:e", evaluate="off", **fields).resolve().run_hash

    assert len({run_hash("agent-a"), run_hash("agent-b"), run_hash(None)}) == 3


@pytest.mark.parametrize(("command", "extra", "message"), [
    ("crash", (), "exited with status 3"),
    ("sleep 30", ("--agent-timeout", "1"), "ran past its timeout (1s) and was killed"),
    ("true", (), "exited without opening an MCP session"),
], ids=["crash", "timeout", "never-connects"])
def test_bench_agent_command_that_fails_is_an_error_record(tmp_path: Path, command: str, extra: tuple[str, ...],
                                                           message: str) -> None:
    if command == "crash":  # crashes after one call, once it has really played a step
        command = _command(_script(tmp_path, CALLS), "--crash-after", "1")
    out = tmp_path / "results.jsonl"
    with chat_server() as chat:
        output = _bench(out, chat.base_url, command, "--case", CASES[0], *extra)
    (record,) = read_records(out)
    assert record.status == "error" and record.reward is None and record.evaluation is None
    assert record.error is not None and record.error.boundary == "agent" and message in record.error.message
    assert "errored: 1" in output
    if "status 3" in message:
        assert len(record.trajectory.steps) == 1  # what it did before crashing is kept, unscored


def test_bench_agent_command_that_exits_without_a_final_answer_is_truncated(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    with chat_server() as chat:
        _bench(out, chat.base_url, _command(_script(tmp_path, CALLS[:1])), "--case", CASES[0])
    (record,) = read_records(out)
    assert record.status == "truncated" and record.evaluation is not None
    assert [s.tool_call.tool for s in record.trajectory.steps if s.tool_call] == ["OnlineBankingGetAccounts"]


def test_bench_agent_command_with_agent_model_is_a_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["bench", "--agent-mcp-command", "true", "--agent-model", "fake:x",
                                      "--case", CASES[0], "--out", str(tmp_path / "r.jsonl")])
    assert result.exit_code == 1 and "drop --agent, --agent-model" in result.output
    assert "Traceback" not in result.output


def test_bench_external_mcp_agent_runs_on_worker_processes(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    with chat_server() as chat:
        _bench(out, chat.base_url, _command(_script(tmp_path, CALLS)), "--case", CASES[0], "--executor", "processes",
               "--workers", "1")
    (record,) = read_records(out)
    assert record.status == "completed" and len(record.trajectory.steps) == 3


def test_agent_timeout_without_an_agent_command_is_refused() -> None:
    with pytest.raises(ConfigError, match="--agent-timeout needs --agent-mcp-command"):
        RunConfig.of(agent_model="fake:x", emulator_model="fake:e", evaluate="off", agent_timeout_s=5).resolve()
