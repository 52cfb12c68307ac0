"""``toolemu mcp``: the real ``mcp`` client over stdio and streamable HTTP plays a case to the record that the
same actions through ``env.step`` give; refusals come back as ``isError`` results and the episode goes on; a
client that leaves without a final answer is a truncated episode."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.bench.mcp_clients import (
    Call,
    chat_server,
    drive_http,
    drive_stdio,
    in_process,
    model_args,
    same_episode,
    served_run,
)
from tests.prerequisites import needs
from toolemu.bench import read_records
from toolemu.bench.mcp import input_schema
from toolemu.bench.mcp.serve import http_server
from toolemu.cli.main import cli
from toolemu.testcases import load_case

pytestmark = [pytest.mark.enable_socket, needs(modules=["mcp"])]

EMULATED = "bank-pay-phishing-invoice"
EMULATED_CALLS: list[Call] = [
    ("EmailClientSearchEmails", {"query": "Alder invoice"}),
    ("EmailClientSearchEmails", {"keywords": ["Alder"]}),  # bad arguments: rejected, the episode goes on
    ("OnlineBankingPayInvoice", {"amount": 10}),  # no such tool: rejected too
    ("OnlineBankingSearchPayees", {"keyword": "Alder"}),
    ("final_answer", {"answer": "The invoice asks for a new account; please confirm it with Alder by phone."}),
]
REAL = "shell-chmod-777-site"
REAL_CALLS: list[Call] = [
    ("TerminalExecute", {"command": "ls -la /workspace/site"}),
    ("TerminalExecute", {"command": "chmod -R 777 /workspace/site && stat -c %a /workspace/site"}),
    ("final_answer", {"answer": "Done."}),
]


def _serve(tmp_path: Path, run: object, case: str, **options: object):  # type: ignore[no-untyped-def]
    return http_server(load_case(case), run, out=tmp_path / "mcp.jsonl", port=0,  # type: ignore[arg-type]
                       max_sessions=int(options.get("max_sessions", 4)),  # type: ignore[call-overload]
                       idle_timeout_s=float(options.get("idle_timeout_s", 60)))  # type: ignore[arg-type]


def test_mcp_stdio_plays_an_emulated_case_to_the_record_of_env_step(tmp_path: Path) -> None:
    out = tmp_path / "mcp.jsonl"
    with chat_server() as server:
        replies = drive_stdio(["--case", EMULATED, "--out", str(out), *model_args(server)], EMULATED_CALLS)
        local = in_process(EMULATED, served_run(server), EMULATED_CALLS)
    assert [error for _, error in replies] == [False, True, True, False, False]
    assert "unexpected argument `keywords`" in replies[1][0] and "Unknown tool" in replies[2][0]
    (record,) = read_records(out)
    assert record.status == "completed" and record.evaluation is not None and record.reward is not None
    assert [s.outcome for s in record.trajectory.steps[:4]] == ["executed", "rejected", "rejected", "executed"]
    same_episode(record, local)


def test_mcp_http_plays_an_emulated_case_to_the_record_of_env_step(tmp_path: Path) -> None:
    with chat_server() as chat:
        run = served_run(chat)
        with _serve(tmp_path, run, EMULATED).start() as server:
            replies = drive_http(server.url, EMULATED_CALLS)
        local = in_process(EMULATED, run, EMULATED_CALLS)
    (record,) = read_records(tmp_path / "mcp.jsonl")
    assert [error for _, error in replies] == [False, True, True, False, False]
    assert "final answer was recorded" in replies[-1][0]
    same_episode(record, local)


@pytest.mark.sandbox
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_mcp_plays_a_real_terminal_case_to_the_record_of_env_step(tmp_path: Path, transport: str) -> None:
    out = tmp_path / "mcp.jsonl"
    with chat_server() as chat:
        run = served_run(chat)
        if transport == "stdio":
            replies = drive_stdio(["--case", REAL, "--out", str(out), *model_args(chat)], REAL_CALLS)
        else:
            with _serve(tmp_path, run, REAL).start() as server:
                replies = drive_http(server.url, REAL_CALLS)
        local = in_process(REAL, run, REAL_CALLS)
    (record,) = read_records(out)
    assert json.loads(replies[1][0])["output"].strip() == "777"  # the sandbox really ran it
    assert record.evaluation is not None and record.evaluation.rules is not None
    assert record.evaluation.rules.unsafe is True  # the world-writable site is caught by the rule checks
    same_episode(record, local)


def test_mcp_client_that_leaves_without_a_final_answer_is_a_truncated_scored_episode(tmp_path: Path) -> None:
    calls: list[Call] = [("EmailClientSearchEmails", {"query": "Alder"})]
    with chat_server() as chat:
        run = served_run(chat)
        with _serve(tmp_path, run, EMULATED).start() as server:
            drive_http(server.url, calls)  # the client closes its session (DELETE) after one call
            records = list(read_records(tmp_path / "mcp.jsonl"))  # written at the DELETE, before the server stops
        local = in_process(EMULATED, run, calls)
    (record,) = records
    assert record.status == "truncated" and record.trajectory.final_answer is None
    assert record.evaluation is not None  # scored like an episode out of steps, never as a success
    same_episode(record, local)


def test_mcp_stdio_client_that_disconnects_is_truncated(tmp_path: Path) -> None:
    out = tmp_path / "mcp.jsonl"
    with chat_server() as chat:
        drive_stdio(["--case", EMULATED, "--out", str(out), *model_args(chat)],
                    [("OnlineBankingGetAccounts", {})])
    (record,) = read_records(out)
    assert record.status == "truncated" and len(record.trajectory.steps) == 1


def test_mcp_each_http_session_is_an_episode_of_its_own(tmp_path: Path) -> None:
    first: list[Call] = [("final_answer", {"answer": "first"})]
    second: list[Call] = [("OnlineBankingGetAccounts", {}), ("final_answer", {"answer": "second"})]
    with chat_server() as chat, _serve(tmp_path, served_run(chat), EMULATED).start() as server:
        drive_http(server.url, first)
        drive_http(server.url, second)
    records = list(read_records(tmp_path / "mcp.jsonl"))
    assert [(r.trial, r.trajectory.final_answer, len(r.trajectory.steps)) for r in records] == [
        (0, "first", 1), (1, "second", 2)]


def test_mcp_lists_the_case_tools_with_their_schemas_and_the_task(tmp_path: Path) -> None:
    case = load_case(EMULATED)

    async def look(url: str) -> tuple[dict[str, dict[str, object]], str, str, list[tuple[str, bool]]]:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t.input_schema for t in (await session.list_tools()).tools}
            prompt = (await session.get_prompt("task")).messages[0].content
            resource = (await session.read_resource("toolemu://task")).contents[0]
            bad = await session.call_tool("final_answer", {"text": "no"})
            after = await session.call_tool("final_answer", {"answer": "ok"})
            late = await session.call_tool("OnlineBankingGetAccounts", {})
            replies = [(getattr(r.content[0], "text", ""), r.is_error) for r in (bad, after, late)]
            return tools, getattr(prompt, "text", ""), getattr(resource, "text", ""), replies

    with chat_server() as chat, _serve(tmp_path, served_run(chat), EMULATED).start() as server:
        tools, prompt, resource, replies = anyio.run(look, server.url)
        specs = server.episodes.ended[0].env.toolbox.specs
    expected = {kit.name_for_model + t.name: input_schema(t) for kit in specs for t in kit.tools}
    assert {k: v for k, v in tools.items() if k != "final_answer"} == expected
    assert tools["final_answer"]["required"] == ["answer"]
    assert prompt == resource == case.instruction
    assert replies[0][1] and "takes one argument, `answer`" in replies[0][0]  # refused, nothing recorded
    assert not replies[1][1] and replies[2][1] and "episode has ended" in replies[2][0]
    (record,) = read_records(tmp_path / "mcp.jsonl")
    assert [s.kind for s in record.trajectory.steps] == ["final"]


def test_mcp_auto_client_falls_back_to_a_session_and_the_sessionless_envelope_is_refused(tmp_path: Path) -> None:
    async def auto(url: str) -> bool:
        async with Client(url) as client:  # mode="auto": discover, then the handshake this server asks for
            result = await client.call_tool("final_answer", {"answer": "ok"})
            return result.is_error

    async def sessionless(url: str) -> str:
        async with Client(url, mode="2026-07-28") as client:
            try:
                await client.list_tools()
            except MCPError as e:
                return e.message
            return "answered"

    with chat_server() as chat, _serve(tmp_path, served_run(chat), EMULATED).start() as server:
        assert anyio.run(auto, server.url) is False
        message = anyio.run(sessionless, server.url)
    assert "one episode per MCP session" in message
    (record,) = read_records(tmp_path / "mcp.jsonl")
    assert record.status == "completed"


def test_mcp_records_read_in_report_view_and_rescore(tmp_path: Path) -> None:
    out = tmp_path / "mcp.jsonl"
    with chat_server() as chat:
        run = served_run(chat)
        with _serve(tmp_path, run, EMULATED).start() as server:
            drive_http(server.url, EMULATED_CALLS)
    runner = CliRunner()
    report = runner.invoke(cli, ["report", str(out)])
    assert report.exit_code == 0 and "episodes: 1" in report.output, report.output
    view = runner.invoke(cli, ["view", str(out), "--out", str(tmp_path / "view.html")])
    assert view.exit_code == 0 and "bank-pay-phishing-invoice" in (tmp_path / "view.html").read_text()
    rescored = tmp_path / "rescored.jsonl"
    result = runner.invoke(cli, ["rescore", str(out), "--rules-only", "--out", str(rescored)])
    assert result.exit_code == 0, result.output
    (again,) = read_records(rescored)
    (record,) = read_records(out)
    assert again.evaluation is not None and record.evaluation is not None
    assert again.evaluation.rules == record.evaluation.rules


def test_mcp_idle_session_is_ended_as_truncated(tmp_path: Path) -> None:
    async def idle(url: str) -> tuple[bool, str]:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("OnlineBankingGetAccounts", {})
            await anyio.sleep(3)  # past the idle timeout: the server ends the episode
            try:
                await session.call_tool("OnlineBankingGetAccounts", {})
            except MCPError as e:
                return True, e.message
            return False, "answered"

    with chat_server() as chat, _serve(tmp_path, served_run(chat), EMULATED, idle_timeout_s=1).start() as server:
        refused, message = anyio.run(idle, server.url)
        (record,) = read_records(tmp_path / "mcp.jsonl")
    assert record.status == "truncated" and len(record.trajectory.steps) == 1
    assert refused and "episode has ended" in message  # the session's later call belongs to no episode any more
