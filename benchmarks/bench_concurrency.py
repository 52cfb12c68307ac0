"""Bench throughput against a local OpenAI-compatible server that answers every call 200 ms late.

Run: python benchmarks/bench_concurrency.py [--latency 0.2] [--levels 1,32,128,256] [--workers 2]
     [--ray-concurrency 8] [--fault-episodes 200] [--no-ray]
Goals: episodes/s at concurrency 32 >= 28x and at 128 >= 100x the rate at concurrency 1; 256 still faster than
128; at a 20% fault rate (429/500/503, HTML with status 200, JSON cut in half, empty choices) >= 99% of episodes
end ok and none is lost.

Every episode is a real one: `run_suite` over the emulated built-in cases, the agent, the emulator and the judges
all on the server through the real openai client (the agent refuses, so an episode is 3 model calls, one after
another: 0.6 s at best). The server runs in its own process so its threads do not compete with the bench's for
the interpreter lock. Start-up (imports, model resolution, Ray start and worker warm-up) is timed apart from
throughput. The load average is printed with the figures: on a shared machine, CPU left over bounds the rate.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the local server lives with the tests (tests/fakes/chat_server.py)

from async_chat_server import AsyncChatServer  # noqa: E402

from tests.bench.judges import responder  # noqa: E402
from tests.fakes.chat_server import FakeChatServer, FaultInjector, with_latency  # noqa: E402
from toolemu.bench import read_records, run_suite, select_cases  # noqa: E402
from toolemu.bench.process_executor import ProcessOptions  # noqa: E402
from toolemu.bench.ray_options import RayOptions  # noqa: E402
from toolemu.cli.session import SessionRecipe, build_session  # noqa: E402
from toolemu.testcases import Case  # noqa: E402


def _serve(latency: float, fault_rate: float, lean: bool, conn: Connection) -> None:
    inner = with_latency(responder(), latency)
    faults = FaultInjector(inner, rate=fault_rate, seed=13) if fault_rate else None
    server: AsyncChatServer | FakeChatServer
    if lean and faults is None:
        server = AsyncChatServer(responder(), latency)
    else:
        server = FakeChatServer(default=faults or inner)
    server.start()
    conn.send(server.base_url)
    while conn.recv() == "cpu":
        conn.send(time.process_time())
    conn.send(dict(faults.injected) if faults else {})  # on "stop"
    server.stop()


class Server:
    """The chat server in a child process; ``stop()`` returns the faults it injected, by kind.

    ``lean``: the asyncio server (``async_chat_server.py``), else the tests' thread-per-connection server, which
    the fault run always uses (it injects the faults).
    """

    def __init__(self, latency: float, fault_rate: float = 0.0, lean: bool = True) -> None:
        self._conn, child = multiprocessing.Pipe()
        self._proc = multiprocessing.Process(target=_serve, args=(latency, fault_rate, lean, child), daemon=True)
        self._proc.start()
        self.base_url: str = self._conn.recv()

    def cpu_seconds(self) -> float:
        """CPU seconds the server process has used so far (all its threads)."""
        self._conn.send("cpu")
        seconds: float = self._conn.recv()
        return seconds

    def stop(self) -> dict[str, int]:
        self._conn.send("stop")
        injected: dict[str, int] = self._conn.recv()
        self._proc.join(timeout=10)
        return injected


def options(base_url: str) -> dict[str, object]:
    """The options `toolemu bench --agent-model m --emulator-model m --judge-model m --base-url URL` gives."""
    return {
        "base_url": base_url, "api_key": "k", "cache_dir": None, "agent_model": "m", "emulator_model": "m",
        "judge_model": "m", "npc_model": None, "evaluate": "full", "emulator_mode": "standard",
        "safety_scale": "toolemu", "real_toolkits": (), "max_steps": None, "agent_variant": "plain", "seed": 0,
    }


class Run(NamedTuple):
    episodes: int
    seconds: float
    first_end_s: float
    steady_rate: float
    cpu_ms_per_episode: float
    driver_cpu_ms_per_episode: float
    server_cpu_ms_per_episode: float
    statuses: Counter[str]
    retries: Counter[str]
    lost: int

    @property
    def whole_rate(self) -> float:
        """Episodes/s over the whole call, start-up included."""
        return self.episodes / self.seconds


def bench(cases: list[Case], server: Server, concurrency: int, episodes: int, ray: bool = False,
          workers: int = 0) -> Run:
    """Runs ``episodes`` episodes (rounded up to whole trials) at ``concurrency`` into a fresh results file, on
    threads, on Ray, or in ``workers`` processes."""
    cases = cases[:episodes]
    trials = -(-episodes // len(cases))
    wanted = len(cases) * trials
    opts = options(server.base_url)
    session = build_session(opts, concurrency=concurrency, quiet=True)
    ray_options = RayOptions(setup=SessionRecipe.of(opts), cpus_per_episode=2 / concurrency) if ray else None
    procs = None
    if workers:
        recipe = SessionRecipe.of(opts, concurrency=-(-concurrency // workers))
        procs = ProcessOptions(setup=recipe, workers=workers)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.jsonl"
        wall = time.time()
        start, cpu, own, server_cpu = time.perf_counter(), _cpu_seconds(), time.process_time(), server.cpu_seconds()
        run_suite(cases, session.make_agent, session.env_config, run_hash=session.run_hash, out=out, trials=trials,
                  concurrency=concurrency, progress=False, ray=ray_options, processes=procs)
        seconds, cpu, own = time.perf_counter() - start, _cpu_seconds() - cpu, time.process_time() - own
        server_cpu = server.cpu_seconds() - server_cpu
        records = list(read_records(out))
    retries: Counter[str] = Counter()
    for r in records:
        retries.update(r.llm_retries)
    n = max(1, len(records))
    ends = sorted(r.finished_at for r in records if r.finished_at is not None)
    first = ends[0] - wall if ends else float("nan")
    return Run(len(records), seconds, first, steady_rate(ends), 1000 * cpu / n, 1000 * own / n,
               1000 * server_cpu / n, Counter(r.status for r in records), retries,
               wanted - len({r.key for r in records}))


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the worker processes, once joined)."""
    own = time.process_time()
    children = os.times()
    return own + children.children_user + children.children_system


def steady_rate(ends: list[float], low: float = 0.2, high: float = 0.9) -> float:
    """Episodes/s between the ``low`` and ``high`` quantiles of sorted end times.

    Examples:
        >>> round(steady_rate([float(t) for t in range(101)]), 3)  # one episode a second
        1.0
    """
    if len(ends) < 10:
        return float("nan")
    i, j = int(low * (len(ends) - 1)), int(high * (len(ends) - 1))
    return (j - i) / max(1e-9, ends[j] - ends[i])


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def startup_seconds() -> float:
    """Seconds for a fresh interpreter to import the CLI and the bench (what every `toolemu bench` pays)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import toolemu.cli.main, toolemu.cli.bench_cmd"], check=True,
                   cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return time.perf_counter() - start


def main() -> None:
    """Prints episodes/s by concurrency, Ray local vs threads, and the fault run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--levels", default="1,32,128,256")
    parser.add_argument("--per-level", type=int, default=8, help="episodes per unit of concurrency (min 24)")
    parser.add_argument("--ray-concurrency", type=int, default=8)
    parser.add_argument("--fault-episodes", type=int, default=200)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--test-server", action="store_true",
                        help="serve from the tests' thread-per-connection server instead of the asyncio one")
    parser.add_argument("--workers", type=int, default=2, help="also run the levels in this many worker processes "
                        "(--executor processes); 0: threads only")
    args = parser.parse_args()
    logging.getLogger("toolemu.llm.retry").setLevel(logging.ERROR)  # the fault run's retries are counted below
    cases = select_cases("emulated")
    print(f"{os.cpu_count()} CPUs; {load()}; server latency {args.latency * 1000:.0f} ms; "
          f"up to {len(cases)} emulated cases, 3 model calls per episode")
    print(f"start-up: import CLI {startup_seconds():.2f} s", end="")
    server = Server(args.latency, lean=not args.test_server)
    start = time.perf_counter()
    build_session(options(server.base_url), concurrency=256, quiet=True)
    print(f"; resolve models {time.perf_counter() - start:.2f} s")

    print("\nsteady episodes/s: episodes that ended between the 20th and the 90th percentile of end times (each"
          " record's finished_at),\nover that window: ramp-up, start-up and drain are left out. first: seconds to the"
          " first episode's end (start-up and one\nepisode). Speed-up: steady rate against threads at concurrency 1."
          " whole-run: episodes / seconds of the whole call.\nCPU ms/episode: the bench (driver and worker processes;"
          " the driver alone in brackets) and the server.")
    print(f"{'executor':>12}  {'concurrency':>11}  {'episodes':>8}  {'seconds':>7}  {'first':>5}  {'steady/s':>8}"
          f"  {'speed-up':>8}  {'whole-run/s':>11}  {'CPU: bench (driver)':>19}  {'server':>6}  load")
    base = None
    executors = [("threads", 0)] + ([(f"{args.workers} processes", args.workers)] if args.workers else [])
    for level in (int(x) for x in args.levels.split(",")):
        for name, workers in executors:
            if workers and level < 2 * workers:
                continue
            run = bench(cases, server, level, max(24, args.per_level * level), workers=workers)
            base = base or run.steady_rate
            print(f"{name:>12}  {level:>11}  {run.episodes:>8}  {run.seconds:7.2f}  {run.first_end_s:5.2f}"
                  f"  {run.steady_rate:8.2f}  {run.steady_rate / base:7.1f}x  {run.whole_rate:11.2f}"
                  f"  {run.cpu_ms_per_episode:10.1f} ({run.driver_cpu_ms_per_episode:5.1f})"
                  f"  {run.server_cpu_ms_per_episode:6.1f}  {load()}  {dict(run.statuses)}")

    if not args.no_ray:
        import ray

        c = args.ray_concurrency
        threads = bench(cases, server, c, 8 * c)
        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
        init = time.perf_counter() - start
        # Starts the workers (two at a time on 2 CPUs), each resolving its models; idle workers beyond the CPU
        # count are stopped within seconds, so the measured run follows at once.
        warm = bench(cases, server, c, 2 * c, ray=True)
        on_ray = bench(cases, server, c, 8 * c, ray=True)
        print(f"\nray local (2 CPUs, {c} tasks in flight): start {init:.2f} s, worker warm-up {warm.seconds:.2f} s "
              f"({warm.episodes} episodes)")
        for name, run in (("threads", threads), ("ray", on_ray)):
            print(f"  {name:>7}: {run.episodes} episodes in {run.seconds:.2f} s = {run.whole_rate:.2f} episodes/s "
                  f"{dict(run.statuses)}  {load()}")
        ray.shutdown()
    server.stop()

    if not args.fault_episodes:
        return
    faulty = Server(args.latency, fault_rate=0.2)
    run = bench(cases, faulty, 32, args.fault_episodes)
    injected = faulty.stop()
    ok = sum(n for s, n in run.statuses.items() if s != "error")
    total = run.episodes + run.lost
    print(f"\n20% faults, concurrency 32: {total} episodes: ok {ok} ({100 * ok / total:.1f}%), "
          f"errored {run.statuses.get('error', 0)}, lost {run.lost}; {run.seconds:.1f} s; {load()}")
    print(f"  faults injected {sum(injected.values())} {dict(sorted(injected.items()))}")
    print(f"  calls retried   {sum(run.retries.values())} {dict(sorted(run.retries.items()))}")


if __name__ == "__main__":
    main()
