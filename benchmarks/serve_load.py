"""``toolemu serve`` under load: sessions/s and steps/s at 1, 32, 128 and 256 concurrent sessions, memory per
session, and what is left after (sessions, threads, child processes of the server).

The server runs in its own process (an emulated case, the fake model as emulator, rule checks), the clients are
OpenEnv's ``GenericEnvClient`` on one asyncio loop here. Each session is one episode: connect, reset, three steps
(two tool calls and the final answer), close. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/serve_load.py [--levels 1 32 128 256] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
from openenv.core.generic_client import GenericEnvClient

ROOT = Path(__file__).resolve().parent.parent
CASE = "smartlock-let-cleaner-in"
ACTIONS = (
    {"tool": "SmartLockSearchGuests", "arguments": {"keyword": "cleaner"}},
    {"tool": "SmartLockGetLockStatus", "arguments": {}},
    {"final_answer": "I looked up the cleaner."},
)
SERVER = """
import sys
from tests.fakes.models import world_model
from toolemu.envs import EnvConfig
from toolemu.serving import PoolLimits, serve, served_cases
from toolemu.testcases import load_case
world = world_model()
config = EnvConfig(emulator_model=world, judge_model=world, evaluate="rules")
serve(served_cases([load_case(sys.argv[1])], config, suite=False),
      PoolLimits(max_sessions=int(sys.argv[3]), idle_timeout_s=120), port=int(sys.argv[2]))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(max_sessions: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVER, CASE, str(port), str(max_sessions)], cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health").status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


async def episode(url: str, seed: int) -> int:
    async with GenericEnvClient(base_url=url, message_timeout_s=300) as client:
        await client.reset(seed=seed)
        for action in ACTIONS:
            result = await client.step(action)
        if not result.done:
            raise RuntimeError("the episode did not end")
    return 1 + len(ACTIONS)


async def load(url: str, concurrency: int, sessions: int) -> tuple[float, int]:
    """Runs ``sessions`` episodes, ``concurrency`` at once; returns the wall time and the calls made."""
    gate = asyncio.Semaphore(concurrency)

    async def one(seed: int) -> int:
        async with gate:
            return await episode(url, seed)

    start = time.perf_counter()
    calls = await asyncio.gather(*(one(seed) for seed in range(sessions)))
    return time.perf_counter() - start, sum(calls)


async def held_memory(url: str, server: psutil.Process, n: int) -> float:
    """RSS growth of the server (MiB) per session with ``n`` sessions open at once, each reset and one step in."""
    before = server.memory_info().rss
    clients = [GenericEnvClient(base_url=url, message_timeout_s=300) for _ in range(n)]
    await asyncio.gather(*(c.connect() for c in clients))
    await asyncio.gather(*(c.reset(seed=i) for i, c in enumerate(clients)))
    await asyncio.gather(*(c.step(ACTIONS[0]) for c in clients))
    grown = server.memory_info().rss - before
    await asyncio.gather(*(c.disconnect() for c in clients))
    return grown / n / 2**20


def leftovers(url: str, server: psutil.Process, threads_idle: int) -> str:
    deadline = time.monotonic() + 10
    counts = httpx.get(url + "/sessions").json()
    while counts["active"] and time.monotonic() < deadline:
        time.sleep(0.1)
        counts = httpx.get(url + "/sessions").json()
    time.sleep(0.5)  # session threads exit once their env is closed
    extra_threads = server.num_threads() - threads_idle
    return (f"active sessions {counts['active']}, opened {counts['opened']}, closed {counts['closed']}, "
            f"threads above idle {extra_threads}, child processes {len(server.children(recursive=True))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 32, 128, 256])
    parser.add_argument("--rounds", type=int, default=2, help="episodes per concurrent session slot")
    args = parser.parse_args()
    proc, url = start_server(max(args.levels))
    server = psutil.Process(proc.pid)
    try:
        asyncio.run(load(url, 4, 8))  # warm-up: imports, first env
        threads_idle = server.num_threads()
        print(f"server pid {proc.pid}, case {CASE}, fake model, rules only; idle RSS "
              f"{server.memory_info().rss / 2**20:.0f} MiB, {threads_idle} threads")
        print("| concurrent sessions | sessions | sessions/s | steps/s | vs 1 | MiB per open session |")
        print("|---:|---:|---:|---:|---:|---:|")
        base: float | None = None
        for level in args.levels:
            sessions = max(level * args.rounds, 16)
            wall, calls = asyncio.run(load(url, level, sessions))
            rate = sessions / wall
            base = base or rate
            memory = asyncio.run(held_memory(url, server, level))
            steps = calls - sessions  # the resets are not steps
            print(f"| {level} | {sessions} | {rate:.1f} | {steps / wall:.1f} | {rate / base:.2f}x | {memory:.2f} |",
                  flush=True)
        print("after:", leftovers(url, server, threads_idle))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
