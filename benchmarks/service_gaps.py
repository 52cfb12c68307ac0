"""Emulator gaps over the scripted OpenAgentSafety service episodes: what the emulated services could not answer.

Runs, through the real sandbox and the emulated ownCloud, GitLab and Plane, the scripted harmful and safe runs
that the flip tests define (``tests/testcases/test_oas_services_flips.py``: ownCloud and Plane tasks, and tasks
reading a served document; ``test_oas_services_flips_gitlab.py``: GitLab tasks), each task folder imported from
the OAS sample data. From each episode's ``Capture.service_gaps`` it prints the gaps by service and phase
(``agent``, ``grader``) with the most frequent endpoints, then the episodes run, those with any gap, those that
failed (the flip tests' own assertions), and the wall time. ``--probe`` adds one episode per service asking for
an endpoint none of them emulates (counted apart), which shows the telemetry reporting what it should.

Needs root (the services' network namespaces) and the OAS samples (``TOOLEMU_FORMATS_DIR``).

Run: python benchmarks/service_gaps.py [--task NAME]... [--top 10] [--probe]
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the scripted runs live with the tests

from tests.formats import FORMATS
from tests.testcases import test_oas_services_flips as owncloud_plane
from tests.testcases import test_oas_services_flips_gitlab as gitlab
from tests.testcases.oas_episode import play_episode
from toolemu.testcases.loader import load_case
from toolemu.testcases.oas import import_oas

Script = tuple[list[str], list[str]]

_HOST = "http://the-agent-company.com"
PROBES: dict[str, str] = {
    "safety-cookies": f"curl -s -o /dev/null -u a:b {_HOST}:8092/ocs/v2.php/apps/notifications/api/v2/notifications",
    "safety-archive": f"curl -s -o /dev/null -H 'PRIVATE-TOKEN: t' {_HOST}:8929/api/v4/projects/1/pipelines",
    "safety-assign-issues": f"curl -s -o /dev/null -H 'x-api-key: k' {_HOST}:8091/api/v1/workspaces/tac/cycles/",
}
"""Task (one per service) -> a request for an endpoint its service does not emulate."""


def scripted_runs() -> dict[str, Script]:
    """Task -> (harmful commands, safe commands), from the flip tests."""
    return {**owncloud_plane.FLIPS, **owncloud_plane.READS_DOCUMENT, **gitlab.FLIPS}


def _table(counts: collections.Counter[tuple[str, str, str, str]], top: int) -> None:
    by_group: dict[tuple[str, str], list[tuple[str, str, int]]] = collections.defaultdict(list)
    for (service, phase, method, path), n in counts.most_common():
        by_group[(service, phase)].append((method, path, n))
    print("| service | phase | requests | endpoints | top endpoints (count) |")
    print("|---|---|---:|---:|---|")
    for (service, phase), rows in sorted(by_group.items()):
        listed = "; ".join(f"{m} {p} ({n})" for m, p, n in rows[:top])
        print(f"| {service} | {phase} | {sum(n for *_, n in rows)} | {len(rows)} | {listed} |")
    if not by_group:
        print("| (none) | | 0 | 0 | |")


def main() -> None:
    """Imports the tasks, runs each scripted episode and prints the gap tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", default=[], help="only this task (repeatable)")
    parser.add_argument("--top", type=int, default=10, help="endpoints listed per service and phase")
    parser.add_argument("--probe", action="store_true", help="one episode per service asking for a missing endpoint")
    args = parser.parse_args()
    scripts = scripted_runs()
    episodes = [(t, label, commands) for t in sorted(scripts) if not args.task or t in args.task
                for label, commands in zip(("harmful", "safe"), scripts[t], strict=True)]
    if args.probe:
        episodes += [(t, "probe", [command]) for t, command in PROBES.items()]
    started = time.perf_counter()
    counts = {"scripted": collections.Counter[tuple[str, str, str, str]](),
              "probe": collections.Counter[tuple[str, str, str, str]]()}
    reasons: dict[tuple[str, str, str, str], str] = {}
    ran = {"scripted": 0, "probe": 0}
    with_gaps = {"scripted": 0, "probe": 0}
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="service-gaps-") as tmp:
        src, out = Path(tmp) / "tasks", Path(tmp) / "cases"
        src.mkdir()
        for name in {t for t, *_ in episodes}:
            shutil.copytree(FORMATS / "oas" / "all-tasks" / name, src / name)
        report = import_oas(src, out, strict=False)
        cases = {name: load_case(path.parent) for name, path in report.imported}
        for task, label, commands in episodes:
            kind = "probe" if label == "probe" else "scripted"
            ran[kind] += 1
            try:
                _, capture = play_episode(cases[task], commands)
            except Exception as e:  # a failed episode is reported, the others still run
                failed.append(f"{task} {label}: {type(e).__name__}: {str(e)[:160]}")
                continue
            with_gaps[kind] += bool(capture.service_gaps)
            for gap in capture.service_gaps:
                key: tuple[str, str, str, str] = (gap.service, gap.phase, gap.method, gap.path)
                counts[kind][key] += gap.count
                reasons.setdefault(key, gap.reason)
    wall = time.perf_counter() - started
    for kind in ("scripted", "probe") if args.probe else ("scripted",):
        print(f"## {kind} episodes")
        _table(counts[kind], args.top)
        print(f"episodes run: {ran[kind]}; with any gap: {with_gaps[kind]}")
    for key, reason in sorted(reasons.items()):
        print(f"  {' '.join(key)}: {reason}")
    print(f"tasks: {len({t for t, *_ in episodes})}; failed episodes: {len(failed)}; wall time: {wall:.1f} s")
    for line in failed:
        print(f"  failed: {line}")


if __name__ == "__main__":
    main()
