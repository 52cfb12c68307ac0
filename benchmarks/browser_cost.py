"""What the Browser toolkit costs an episode: start-up, step latency and memory, pooled driver or not.

Three kinds of episode over the same sandbox with ownCloud's emulated service, ``--episodes`` each:
``no browser`` (the agent fetches the log-in page with curl, ``--steps`` times), ``browser, pooled`` (one warm
Playwright driver per worker thread; only Chromium starts per episode) and ``browser, per episode`` (a driver and a
Chromium per episode). Each browser episode goes to the log-in page, fills both fields, logs in and opens a folder,
then repeats ``goto`` to reach ``--steps`` steps. Printed: median episode set-up (reset), first-call latency (the
browser's start-up is its excess over a later step), median step latency, and the memory of the episode's
processes (PSS of the sandbox's and the services' child, and of the browser's tree: Chromium plus, per episode,
its driver), each also as a ratio to the episode without a browser.

Run (as root, with bwrap and Debian's chromium): python benchmarks/browser_cost.py [--episodes 5] [--steps 6]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from toolemu.core.types import EmulationContext, EnvironmentSpec, ToolCall
from toolemu.toolkits.base import EpisodeSetup
from toolemu.toolkits.browser import BrowserToolkit
from toolemu.toolkits.browser.driver import shared_driver
from toolemu.toolkits.sandbox import BrowserConfig, Sandbox, SandboxConfig

LOGIN = "http://the-agent-company.com:8092/index.php/login"
SETUP = EpisodeSetup(case_id="browser-cost", emulation=EmulationContext(instruction="bench"),
                     environment=EnvironmentSpec(), services=("owncloud",))


def _pss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:"))
    return total


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _driver_pids() -> list[int]:
    """The Playwright driver (node) processes under this process."""
    return [p for p in _children(os.getpid()) if "node" in Path(f"/proc/{p}/comm").read_text()]


def _timed(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def _browser_steps(kit: BrowserToolkit, steps: int) -> list[Callable[[], object]]:
    def call(tool: str, **arguments: object) -> Callable[[], object]:
        return lambda: kit.call(ToolCall(tool=tool, arguments=arguments), [])  # type: ignore[arg-type]

    script = [call("BrowserGoto", url=LOGIN), call("BrowserFill", bid="10", value="theagentcompany"),
              call("BrowserFill", bid="12", value="theagentcompany"), call("BrowserPress", bid="12", key_comb="Enter"),
              call("BrowserRun", code="noop(0)")]
    while len(script) < steps:
        script.append(call("BrowserGoto", url=LOGIN))
    return script[:steps]


def _episode(sandbox: Sandbox, kit: BrowserToolkit | None, steps: int) -> dict[str, float]:
    reset = _timed(lambda: (sandbox.reset(SETUP.environment, services=SETUP.services),
                            kit.reset(SETUP) if kit is not None else None))
    if kit is None:
        script = [lambda: sandbox.run_shell(f"curl -s -o /dev/null {LOGIN}") for _ in range(steps)]
    else:
        script = _browser_steps(kit, steps)
    times = [_timed(step) for step in script]
    sandbox_pids = sandbox.cgroup.pids() if sandbox.cgroup is not None else []
    services = sandbox.services
    service_pid = getattr(services, "_pid", None)  # the services' child serves the episode in every kind
    if isinstance(service_pid, int):
        sandbox_pids.append(service_pid)
    browser_kb = 0
    if kit is not None and kit.jail is not None and kit.jail.cgroup is not None:
        browser_kb = _pss_kb(kit.jail.cgroup.pids())
        if not kit.config.warm_driver:
            browser_kb += _pss_kb(_driver_pids())
    return {"reset": reset, "first": times[0], "step": statistics.median(times[1:]),
            "sandbox_mb": _pss_kb(sandbox_pids) / 1024, "browser_mb": browser_kb / 1024}


def _run(kind: str, episodes: int, steps: int) -> dict[str, float]:
    config = SandboxConfig(browser=BrowserConfig(warm_driver=kind != "per-episode"))
    sandbox = Sandbox(config)
    try:
        kit = BrowserToolkit(sandbox) if kind != "none" else None
        rows = [_episode(sandbox, kit, steps) for _ in range(episodes + 1)][1:]  # the first warms caches
    finally:
        sandbox.close()
    return {key: statistics.median(r[key] for r in rows) for key in rows[0]}


def main() -> None:
    """Prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    driver_start = _timed(shared_driver)
    results = {"no browser": _run("none", args.episodes, args.steps),
               "browser, pooled": _run("pooled", args.episodes, args.steps),
               "browser, per episode": _run("per-episode", args.episodes, args.steps)}
    base = results["no browser"]
    base_mb = base["sandbox_mb"]
    print(f"{os.cpu_count()} CPUs; {args.episodes} episodes x {args.steps} steps each (medians); "
          f"warm driver start-up once per worker: {driver_start * 1000:.0f} ms")
    print(f"{'episode':<22}{'reset ms':>10}{'first call ms':>15}{'start-up ms':>13}{'step ms':>10}"
          f"{'step x':>8}{'memory MB':>11}{'memory x':>10}")
    for name, r in results.items():
        startup = r["first"] - r["step"]
        memory = r["sandbox_mb"] + r["browser_mb"]
        print(f"{name:<22}{r['reset'] * 1000:>10.0f}{r['first'] * 1000:>15.0f}{startup * 1000:>13.0f}"
              f"{r['step'] * 1000:>10.1f}{r['step'] / base['step']:>8.1f}{memory:>11.0f}{memory / base_mb:>10.1f}")


if __name__ == "__main__":
    main()
