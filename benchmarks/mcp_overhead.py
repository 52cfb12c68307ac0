"""MCP call overhead: the time of one tool call played through a case's MCP server (the real ``mcp`` client over
stdio and over streamable HTTP) against the same ``env.step`` in this process, as ratios in one run.

The env's own work is made small and equal in all three: an emulated case whose emulator is an instant fake
(the schema-minimal reply), no scoring, distinct calls (so the loop guard never trips). What is left over is
the protocol: JSON-RPC framing, the transport, the SDK's dispatch, and the handler's hop to a worker thread.

Run: python benchmarks/mcp_overhead.py [--steps 300] [--episodes 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from toolemu.bench.mcp import McpEpisode, tool_action
from toolemu.bench.mcp.http import McpHttpServer, SessionEpisodes
from toolemu.bench.mcp.server import serve_stdio
from toolemu.bench.reference import minimal_instance
from toolemu.core.types import Message
from toolemu.envs import EnvConfig, ToolEmuEnv
from toolemu.llm import FakeLLM, SamplingParams

CASE = "bank-pay-phishing-invoice"
TOOL = "OnlineBankingSearchPayees"


def _reply(_: Sequence[Message], params: SamplingParams) -> str:
    return json.dumps(minimal_instance(params.json_schema or {}))


def _env(steps: int) -> ToolEmuEnv:
    config = EnvConfig(emulator_model=FakeLLM.from_function(_reply, name="instant-emulator"), evaluate=False,
                       max_steps=steps + 1)
    return ToolEmuEnv(CASE, config)


def _args(i: int) -> dict[str, object]:
    return {"keyword": f"payee-{i}"}


def in_process(steps: int) -> list[float]:
    """Seconds of each ``env.step`` of one episode."""
    env = _env(steps)
    try:
        env.reset(seed=0)
        times = []
        for i in range(steps):
            action = tool_action(TOOL, _args(i))  # type: ignore[arg-type]
            start = time.perf_counter()
            env.step(action)
            times.append(time.perf_counter() - start)
        env.truncate()
        return times
    finally:
        env.close()


async def _calls(session: ClientSession, steps: int) -> list[float]:
    await session.initialize()
    await session.list_tools()
    times = []
    for i in range(steps):
        start = time.perf_counter()
        result = await session.call_tool(TOOL, _args(i))
        times.append(time.perf_counter() - start)
        if result.is_error:
            raise RuntimeError(f"call {i} failed: {result.content}")
    return times


def over_http(steps: int) -> list[float]:
    """Seconds of each MCP call of one episode over streamable HTTP on loopback."""
    episodes = SessionEpisodes(lambda _: McpEpisode(_env(steps), seed=0))

    async def run(url: str) -> list[float]:
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            return await _calls(session, steps)

    with McpHttpServer(episodes, name="bench").start() as server:
        return anyio.run(run, server.url)


def over_stdio(steps: int) -> list[float]:
    """Seconds of each MCP call of one episode over stdio (this script, started as the server)."""
    params = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).resolve()), "--serve-stdio",
                                                                 str(steps)],
                                   env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])})

    async def run() -> list[float]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await _calls(session, steps)

    return anyio.run(run)


def _serve_stdio(steps: int) -> None:
    episode = McpEpisode(_env(steps), seed=0)
    episode.start()
    try:
        anyio.run(serve_stdio, episode)
    finally:
        episode.env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="Calls per episode.")
    parser.add_argument("--episodes", type=int, default=3, help="Episodes per way of calling.")
    parser.add_argument("--serve-stdio", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_stdio is not None:
        _serve_stdio(args.serve_stdio)
        return
    ways = {"env.step in-process": in_process, "MCP over stdio": over_stdio, "MCP over HTTP": over_http}
    medians: dict[str, float] = {}
    for name, play in ways.items():
        times = [t for _ in range(args.episodes) for t in play(args.steps)[5:]]  # the first calls warm caches
        medians[name] = statistics.median(times) * 1000
        p90 = statistics.quantiles(times, n=10)[-1] * 1000
        print(f"{name:>22}: median {medians[name]:.3f} ms/step, p90 {p90:.3f} ms ({len(times)} calls)")
    base = medians["env.step in-process"]
    for name in ("MCP over stdio", "MCP over HTTP"):
        print(f"{name:>22}: {medians[name] / base:.1f}x env.step in-process, "
              f"+{medians[name] - base:.3f} ms of protocol per call")


if __name__ == "__main__":
    main()
