"""Sandbox speed: median episode reset, episode end and per-step overhead through the real Terminal toolkit.

Also the first Python cell of an episode (the interpreter starting in the shell's namespaces).

Each figure is measured twice in one run, with the quotas (cgroup, size-capped tmpfs root) and without them
(the same code with both turned off), and printed with their ratio. As root, reset is also measured with the
emulated web services (``--services``, OpenAgentSafety's ownCloud, GitLab, Plane) against reset without them,
both with the pool's spare (the design) and without it (a fork per reset), plus the fork server's start-up.

Run: python benchmarks/sandbox_reset.py [--episodes 30] [--steps 200] [--rounds 3] [--workdir DIR]
     [--episode-ms MS] [--profile default|oas] [--services owncloud,gitlab,plane] [--service-episode-ms MS]
Goals: reset <= 20 ms; step overhead (Terminal `true` minus a direct `subprocess.run(["true"])`) <= 10 ms;
reset with services <= 2x reset without them.
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


STATUS = {"owncloud": "/status.php", "gitlab": "/api/v4/version", "plane": "/api/v1/workspaces/tac/projects/"}
"""A cheap request per service, for the first-request figure."""


def _measure_services(args: argparse.Namespace, env: EnvironmentSpec, setup: EpisodeSetup,
                      names: list[str], spare: bool) -> dict[str, list[float]]:
    """Reset without services, reset with ``names``, and the first request to each, in s (alternating)."""
    from toolemu.services.base import PORTS
    from toolemu.services.pool import ServicePool

    pool = ServicePool(spare=spare)
    saved = sandbox_module.start_services
    sandbox_module.start_services = lambda n, e, **k: saved(n, e, pool=pool, **k)  # type: ignore[assignment]
    curl = " && ".join(f"curl -s -o /dev/null -H 'PRIVATE-TOKEN: x' -H 'x-api-key: x' -u a:b "
                       f"http://the-agent-company.com:{PORTS[n]}{STATUS[n]}" for n in names)
    request = ToolCall(tool="TerminalExecute", arguments={"command": curl})
    out: dict[str, list[float]] = {"plain": [], "services": [], "request": []}
    try:
        with Sandbox(workdir=args.workdir) as sandbox:
            kit = TerminalToolkit(sandbox)
            started = time.perf_counter()
            sandbox.reset(env, services=names)
            out["cold"] = [time.perf_counter() - started]
            out["startup"] = [pool.startup_s or 0.0]
            for _ in range(args.episodes):
                out["plain"].append(_timed(lambda: (sandbox.reset(env), kit.reset(setup))))
                kit.call(TRUE, [])
                time.sleep(args.service_episode_ms / 1000)
                out["services"].append(_timed(lambda: (sandbox.reset(env, services=names), kit.reset(setup))))
                out["request"].append(_timed(lambda: kit.call(request, [])))
                time.sleep(args.service_episode_ms / 1000)
    finally:
        sandbox_module.start_services = saved  # type: ignore[assignment]
        pool.close()
    return out


def _print_services(args: argparse.Namespace, env: EnvironmentSpec, setup: EpisodeSetup) -> None:
    import os

    from toolemu.services.pool import services_unavailable

    if os.geteuid() != 0:
        print("services: not measured (the emulated services need root)")
        return
    names = [n for n in args.services.split(",") if n]
    missing = {n: why for n in names if (why := services_unavailable([n])) is not None}
    names = [n for n in names if n not in missing]
    for name, why in missing.items():
        print(f"services: {name} not measured ({why})")
    if not names:
        return
    for group in [[n] for n in names] + ([names] if len(names) > 1 else []):
        label = "+".join(group)
        for spare in (True, False):
            got = {k: _median_ms(v) for k, v in _measure_services(args, env, setup, group, spare).items()}
            kind = "spare" if spare else "no_spare"
            print(f"services[{label}] {kind}: reset_median_ms={got['services']:.2f} vs {got['plain']:.2f} without "
                  f"(ratio {got['services'] / got['plain']:.2f}x); first_request_ms={got['request']:.2f}; "
                  f"first_reset_ms={got['cold']:.1f} (fork server start-up {got['startup']:.1f} ms, seed build)")


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
    parser.add_argument("--services", default="owncloud,gitlab,plane",
                        help="emulated services to measure reset with, comma-separated ('' for none)")
    parser.add_argument("--service-episode-ms", type=float, default=200.0,
                        help="simulated agent time per service episode (the spare is made meanwhile)")
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
    _print_services(args, env, setup)


if __name__ == "__main__":
    main()
