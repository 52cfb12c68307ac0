"""Sandbox speed: median episode reset, episode end and per-step overhead through the real Terminal toolkit.

Also the first Python cell of an episode (the interpreter starting in the shell's namespaces).

Each figure is measured twice in one run, with the quotas (cgroup, size-capped tmpfs root) and without them
(the same code with both turned off), and printed with their ratio.

Run: python benchmarks/sandbox_reset.py [--episodes 30] [--steps 200] [--rounds 3] [--workdir DIR]
     [--episode-ms MS] [--profile default|oas]
Goals: reset <= 20 ms; step overhead (Terminal `true` minus a direct `subprocess.run(["true"])`) <= 10 ms.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import toolemu.toolkits.sandbox.sandbox as sandbox_module
from toolemu.core.types import EmulationContext, EnvironmentSpec, SeedFile, ToolCall
from toolemu.toolkits.base import EpisodeSetup
from toolemu.toolkits.real import TerminalToolkit
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig, snapshot_root
from toolemu.toolkits.sandbox.quota import detect_cgroups

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


WRITE = ToolCall(
    tool="TerminalExecute",
    arguments={"command": "rm -rf /var/* && cd /tmp && for i in $(seq 100); do echo $i > /workspace/w$i; done"},
)


@contextmanager
def _quotas(enabled: bool) -> Iterator[None]:
    """With ``enabled`` false: the same sandbox with its cgroup and its tmpfs root turned off (the baseline)."""
    if enabled:
        yield
        return
    saved = sandbox_module.Cgroup.create, sandbox_module.mount_private_tmpfs
    sandbox_module.Cgroup.create = lambda *a, **k: None  # type: ignore[method-assign]
    sandbox_module.mount_private_tmpfs = lambda *a, **k: "turned off for the baseline"  # type: ignore[assignment]
    try:
        yield
    finally:
        sandbox_module.Cgroup.create, sandbox_module.mount_private_tmpfs = saved  # type: ignore[method-assign]


def _measure(
    args: argparse.Namespace, env: EnvironmentSpec, setup: EpisodeSetup, quotas: bool
) -> dict[str, list[float]]:
    """Reset, first command, episode end (stop + snapshot) and step samples, in s, for one setting."""
    with _quotas(quotas), Sandbox(workdir=args.workdir) as sandbox:
        kit = TerminalToolkit(sandbox)
        sandbox.reset(env)
        resets: list[float] = []
        first: list[float] = []
        cells: list[float] = []
        ends: list[float] = []
        # The instruction becomes /instruction/task.md under the oas profile (older code takes none).
        takes = "instruction" in inspect.signature(sandbox.reset).parameters
        kwargs = {"instruction": setup.emulation.instruction} if takes else {}
        for _ in range(args.episodes):
            resets.append(_timed(lambda: (sandbox.reset(env, **kwargs), kit.reset(setup))))
            first.append(_timed(lambda: kit.call(TRUE, [])))
            cells.append(_timed(lambda: sandbox.run_python("pass")))
            kit.call(WRITE, [])
            ends.append(_timed(lambda: (sandbox.stop(), sandbox.final_state())))
            time.sleep(args.episode_ms / 1000)
        sandbox.reset(env)
        kit.call(TRUE, [])
        time.sleep(0.2)
        steps = [_timed(lambda: kit.call(TRUE, [])) for _ in range(args.steps)]
        bin_steps = [_timed(lambda: kit.call(BIN_TRUE, [])) for _ in range(args.steps)]
        capped = sandbox.size_capped
        grouped = sandbox.cgroup is not None
    return {"reset": resets, "first": first, "cell": cells, "end": ends, "step": steps, "bin": bin_steps,
            "capped": [float(capped)], "cgroup": [float(grouped)]}


def _sparse_snapshot_ms(workdir: Path | None) -> tuple[float, float]:
    """Snapshot time of a root holding one 32 GB sparse file, and of one holding 500 sparse 64 MiB files."""
    figures = []
    for count, size in ((1, 32 * 2**30), (500, 64 * 2**20)):
        with tempfile.TemporaryDirectory(dir=workdir) as tmp:
            root = Path(tmp)
            (root / "workspace").mkdir()
            for i in range(count):
                with open(root / "workspace" / f"sparse{i}", "wb") as f:
                    f.write(b"data")
                    f.truncate(size)
            start = time.perf_counter()
            snap = snapshot_root(root, SandboxConfig())
            figures.append((time.perf_counter() - start) * 1000)
            assert snap.overflow is None and len(snap.files) == count
    return figures[0], figures[1]


def main() -> None:
    """Runs the benchmark and prints one line per figure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds without and with the quotas")
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

    # Rounds alternate the two settings so that a change in the machine's load hits both alike.
    samples: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
    for _ in range(args.rounds):
        for quotas in (False, True):
            for key, values in _measure(args, env, setup, quotas).items():
                samples[quotas].setdefault(key, []).extend(values)
    base = {key: _median_ms(values) for key, values in samples[False].items()}
    got = {key: _median_ms(values) for key, values in samples[True].items()}
    direct = [_timed(lambda: subprocess.run(["/bin/true"], check=True)) for _ in range(args.steps)]
    direct_ms = _median_ms(direct)
    where = args.workdir or tempfile.gettempdir()
    print(
        f"episodes={args.episodes} steps={args.steps} seed_files={len(ENV.files)} workdir={where} "
        f"episode_ms={args.episode_ms:g} profile={args.profile} rounds={args.rounds}"
    )
    cgroup, capped = ("on" if got[k] else "unavailable" for k in ("cgroup", "capped"))
    print(f"quotas: cgroup={cgroup} tmpfs_root={capped} ({detect_cgroups().reason})")
    print(f"reset_median_ms={got['reset']:.2f}  (goal <= 20; ratio to goal {got['reset'] / 20:.2f})")
    print(f"first_command_after_reset_median_ms={got['first']:.2f}  (includes waiting for bwrap + bash to start)")
    print(f"first_python_cell_median_ms={got['cell']:.2f}  (starts the interpreter)")
    print(f"episode_end_median_ms={got['end']:.2f}  (stop every process + snapshot, {len(ENV.files) + 100} files)")
    print(f"terminal_true_builtin_step_median_ms={got['step']:.2f}")
    print(f"terminal_bin_true_step_median_ms={got['bin']:.2f}")
    print(f"direct_subprocess_bin_true_median_ms={direct_ms:.2f}")
    print(f"step_overhead_ms={got['bin'] - direct_ms:.2f}  (terminal /bin/true minus direct; goal <= 10)")
    print(f"step_ratio_terminal_vs_direct={got['bin'] / direct_ms:.2f}x")
    one, many = _sparse_snapshot_ms(args.workdir)
    print(f"snapshot_one_32gb_sparse_file_ms={one:.2f}  snapshot_500_sparse_64mib_files_ms={many:.2f}  (holes skipped)")
    for key, label in (("reset", "reset"), ("first", "first_command"), ("end", "episode_end"), ("bin", "step")):
        print(f"{label}_with_quotas_vs_without={got[key] / base[key]:.2f}x  ({got[key]:.2f} ms vs {base[key]:.2f} ms)")


if __name__ == "__main__":
    main()
