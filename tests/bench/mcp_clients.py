"""Drives a case's MCP server with the real ``mcp`` client over stdio and streamable HTTP, and the same actions
through ``env.step`` in this process, for the MCP tests (not a test module)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import JsonValue

from tests.bench.judges import responder
from tests.fakes.chat_server import FakeChatServer
from toolemu.bench import EpisodeRecord
from toolemu.bench.rollout import record_from_info
from toolemu.bench.run_config import ResolvedRun, RunConfig
from toolemu.core.types import ToolCall
from toolemu.envs import ToolEmuEnv
from toolemu.testcases import Case, load_case

REPO = Path(__file__).resolve().parents[2]
Call = tuple[str, dict[str, JsonValue]]
"""An MCP tool call: name and arguments (``final_answer`` with ``answer`` ends the episode)."""


def served_run(server: FakeChatServer, **fields: object) -> ResolvedRun:
    """The run ``toolemu mcp`` resolves with every model on ``server``."""
    return RunConfig.of(emulator_model="m", judge_model="m", base_url=server.base_url, api_key="k",
                        **fields).resolve_served("mcp-client")


def model_args(server: FakeChatServer) -> list[str]:
    """The model options of ``toolemu mcp`` with every model on ``server``."""
    return ["--emulator-model", "m", "--judge-model", "m", "--base-url", server.base_url, "--api-key", "k"]


def chat_server() -> FakeChatServer:
    """A local endpoint whose emulator fills each reply schema and whose judges are lenient."""
    return FakeChatServer(default=responder())


async def _play(session: ClientSession, calls: Sequence[Call]) -> list[tuple[str, bool]]:
    await session.initialize()
    replies = []
    for name, arguments in calls:
        result = await session.call_tool(name, arguments)
        replies.append((getattr(result.content[0], "text", ""), result.is_error))
    return replies


def drive_http(url: str, calls: Sequence[Call]) -> list[tuple[str, bool]]:
    """Plays ``calls`` in one session over streamable HTTP (closed afterwards); returns (text, isError) of each."""

    async def run() -> list[tuple[str, bool]]:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            return await _play(session, calls)

    return anyio.run(run)


def drive_stdio(args: Sequence[str], calls: Sequence[Call]) -> list[tuple[str, bool]]:
    """Starts ``python -m toolemu mcp ... --stdio`` and plays ``calls``; the server exits when the client closes."""
    env = {"PYTHONPATH": str(REPO), **{k: v for k, v in os.environ.items() if k.startswith("TOOLEMU_")}}
    params = StdioServerParameters(command=sys.executable, args=["-m", "toolemu", "mcp", "--stdio", *args],
                                   env=env, cwd=str(REPO))

    async def run() -> list[tuple[str, bool]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await _play(session, calls)

    return anyio.run(run)


def action_of(call: Call) -> str:
    """The env action of an MCP call, in the env's own JSON tool-call and final-answer forms."""
    name, arguments = call
    if name == "final_answer":
        return json.dumps({"final_answer": arguments["answer"]}, ensure_ascii=False)
    return ToolCall(tool=name, arguments=arguments).model_dump_json()


def in_process(case: str | Case, run: ResolvedRun, calls: Sequence[Call], *, seed: int = 0,
               trial: int = 0) -> EpisodeRecord:
    """The record of the same calls sent through ``env.step`` here (truncated if they end without an answer)."""
    env = ToolEmuEnv(load_case(case), run.env_config)
    try:
        env.reset(seed=seed)
        info: dict[str, object] = {}
        for call in calls:
            _, _, terminated, truncated, info = env.step(action_of(call))
            if terminated or truncated:
                break
        else:
            info = env.truncate()
        return record_from_info(env, info, config_hash=run.run_hash, trial=trial, seconds=0.0)
    finally:
        env.close()


def same_episode(served: EpisodeRecord, local: EpisodeRecord) -> None:
    """Asserts two records hold the same episode: steps, status, final state, evaluation and reward."""
    assert [s.model_dump() for s in served.trajectory.steps] == [s.model_dump() for s in local.trajectory.steps]
    assert (served.status, served.reward, served.config_hash) == (local.status, local.reward, local.config_hash)
    assert served.final_state == local.final_state
    assert served.evaluation == local.evaluation
