"""Sandbox speed: median episode reset and per-step overhead of `true` through the real Terminal toolkit.

Run: python benchmarks/sandbox_reset.py [--episodes 30] [--steps 200] [--workdir DIR] [--episode-ms MS]
     [--profile default|oas]
Goals: reset <= 20 ms; step overhead (Terminal `true` minus a direct `subprocess.run(["true"])`) <= 10 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolemu.core.types import EmulationContext, EnvironmentSpec, SeedFile, ToolCall
from toolemu.toolkits.base import EpisodeSetup
from toolemu.toolkits.real import TerminalToolkit
from toolemu.toolkits.sandbox import Sandbox

ENV = EnvironmentSpec(
    files=(
        *(SeedFile(path=f"/workspace/data/file{i}.txt", content=f"row {i}\n" * 20) for i in range(20)),
        SeedFile(path="/var/log/app.log", content="started\n"),
        SeedFile(path="/etc/app.conf", content="x=1\n"),
    ),
    env={"APP_ENV": "bench"},
)
SETUP = EpisodeSetup(case_id="bench", emulation=EmulationContext(instruction="bench"), environment=ENV)
TRUE = ToolCall(tool="TerminalExecute", arguments={"command": "true"})
BIN_TRUE = ToolCall(tool="TerminalExecute", arguments={"command": "/bin/true"})


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    """Runs the benchmark and prints one line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument(
        "--workdir", type=Path, default=None, help="host folder for sandbox roots (default: TMPDIR)"
    )
    parser.add_argument(
        "--episode-ms", type=float, default=0.0, help="simulated agent time per episode before the next reset"
    )
    parser.add_argument(
        "--profile", choices=("default", "oas"), default="default", help="sandbox profile (default: %(default)s)"
    )
    args = parser.parse_args()
    env = ENV.model_copy(update={"sandbox_profile": args.profile})
    setup = SETUP.model_copy(update={"environment": env})

    with Sandbox(workdir=args.workdir) as sandbox:
        kit = TerminalToolkit(sandbox)
        sandbox.reset(env)
        resets: list[float] = []
        first: list[float] = []
        for _ in range(args.episodes):
            kit.call(ToolCall(tool="TerminalExecute", arguments={"command": "rm -rf /var/* && cd /tmp"}), [])
            resets.append(_timed(lambda: (sandbox.reset(env), kit.reset(setup))))
            first.append(_timed(lambda: kit.call(TRUE, [])))
            time.sleep(args.episode_ms / 1000)
        time.sleep(0.2)
        steps = [_timed(lambda: kit.call(TRUE, [])) for _ in range(args.steps)]
        bin_steps = [_timed(lambda: kit.call(BIN_TRUE, [])) for _ in range(args.steps)]
    direct = [_timed(lambda: subprocess.run(["/bin/true"], check=True)) for _ in range(args.steps)]

    reset_ms, first_ms = _median_ms(resets), _median_ms(first)
    step_ms, bin_ms, direct_ms = _median_ms(steps), _median_ms(bin_steps), _median_ms(direct)
    overhead_ms = bin_ms - direct_ms
    where = args.workdir or tempfile.gettempdir()
    print(
        f"episodes={args.episodes} steps={args.steps} seed_files={len(ENV.files)} workdir={where} "
        f"episode_ms={args.episode_ms:g} profile={args.profile}"
    )
    print(f"reset_median_ms={reset_ms:.2f}  (goal <= 20; ratio to goal {reset_ms / 20:.2f})")
    print(f"first_command_after_reset_median_ms={first_ms:.2f}  (includes waiting for bwrap + bash to start)")
    print(f"terminal_true_builtin_step_median_ms={step_ms:.2f}")
    print(f"terminal_bin_true_step_median_ms={bin_ms:.2f}")
    print(f"direct_subprocess_bin_true_median_ms={direct_ms:.2f}")
    print(f"step_overhead_ms={overhead_ms:.2f}  (terminal /bin/true minus direct; goal <= 10)")
    print(f"step_ratio_terminal_vs_direct={bin_ms / direct_ms:.2f}x")


if __name__ == "__main__":
    main()
