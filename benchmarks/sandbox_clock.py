"""What the episode clock costs (``SandboxConfig.clock_start``: libfaketime plus the file-time sweeps).

Each figure is the median over ``--runs`` of the same request in a real sandbox with the clock and without it,
printed side by side with the difference: a shell builtin, a new process, a fresh Python, a Python cell, a file
write through the file tool, 100,000 clock reads in one cell, and the sweep alone over roots of growing size.

Run: python benchmarks/sandbox_clock.py [--runs 40] [--files 0,1000,10000] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from toolemu.core.types import EnvironmentSpec, SeedFile
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig

START = datetime(2025, 5, 5, 3, 27, tzinfo=UTC)


def _median_ms(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1000


def _requests(sb: Sandbox) -> dict[str, Callable[[], object]]:
    return {
        "shell builtin (true)": lambda: sb.run_shell("true"),
        "new process (/bin/true)": lambda: sb.run_shell("/bin/true"),
        "fresh python3 -c pass": lambda: sb.run_shell("python3 -c pass"),
        "python cell (pass)": lambda: sb.run_python("pass"),
        "file write (file tool)": lambda: sb.file_op({"op": "write", "path": "/workspace/out.txt", "content": "x"}),
        "100k time.time() in a cell": lambda: sb.run_python("import time\nfor _ in range(100000): time.time()"),
    }


def _env(files: int) -> EnvironmentSpec:
    seeds = tuple(SeedFile(path=f"/workspace/data/d{i // 100}/f{i}.txt", content="x\n") for i in range(files))
    return EnvironmentSpec(files=seeds, sandbox_profile="oas")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--files", default="0,1000,10000", help="seed-file counts for the per-command figures")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    counts = [int(c) for c in args.files.split(",")]
    for files in counts:
        figures: dict[str, list[float]] = {}
        for clock in (None, START):
            with Sandbox(SandboxConfig(clock_start=clock, command_timeout_s=60), workdir=args.workdir) as sb:
                sb.reset(_env(files))
                for name, request in _requests(sb).items():
                    request()  # warm: the interpreter starts, the caches fill
                    runs = max(3, args.runs // 10) if name.startswith("100k") else args.runs
                    figures.setdefault(name, []).append(_median_ms(request, runs))
                if sb.clock is not None:
                    root = sb.root
                    figures.setdefault("sweep alone (no change)", []).extend(
                        [0.0, _median_ms(lambda clk=sb.clock, at=root: clk.sweep(at), args.runs)])
                    began = time.perf_counter()
                    sb.reset(_env(files))
                    reset_clock = (time.perf_counter() - began) * 1000
        print(f"\n== episode root with {files} seed files (median ms over {args.runs} runs)")
        print(f"{'request':34} {'real clock':>11} {'episode clock':>14} {'difference':>11}")
        for name, (plain, faked) in figures.items():
            print(f"{name:34} {plain:11.2f} {faked:14.2f} {faked - plain:+11.2f}")
        print(f"(a reset with the clock, which stamps every file: {reset_clock:.1f} ms)")


if __name__ == "__main__":
    main()
