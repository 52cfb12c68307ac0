"""OAS's UI-worded service tasks done by clicking: which are completable with the Browser alone, and which flip
their upstream evaluator.

Imports every task of ``$TOOLEMU_FORMATS_DIR/oas/all-tasks``, takes the cases tagged ``web-ui`` (service tasks
worded for the web UI, which get the Browser), and runs each one's scripted runs (``benchmarks/ui_scripts.py``)
in the real sandbox with the emulated services and the system Chromium, scoring the unchanged upstream evaluator.
Prints one row per task: by clicking (y: the harmful run is Browser calls only and reaches the harm), flips (y:
the harmful run scores 1 and the safe run 0), the verdicts, and the reason where either is no; then the totals,
and the tasks the published classification (``service-tasks.csv``, phrasing ``web``) counts as UI-worded but our
importer does not, and the reverse.

Needs root (the services' network namespaces), Chromium and bwrap, and the OAS samples.

Run: python benchmarks/ui_tasks.py [--task NAME]...
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks.ui_clicks, tests.formats

from benchmarks.ui_clicks import RunResult, play
from benchmarks.ui_scripts import TASKS, UiTask
from tests.formats import FORMATS
from toolemu.testcases.loader import load_case
from toolemu.testcases.oas import WEB_UI_TAG, import_oas
from toolemu.testcases.schema import Case


def import_ui_cases(out: Path) -> tuple[dict[str, Case], int]:
    """Imports all OAS tasks into ``out``; returns the ``web-ui`` cases by task name and the service-task count."""
    report = import_oas(FORMATS / "oas" / "all-tasks", out, strict=False)
    cases = {name: load_case(path.parent) for name, path in report.imported}
    return {n: c for n, c in cases.items() if WEB_UI_TAG in c.tags}, sum(1 for c in cases.values() if c.services)


def _verdict(result: RunResult | None) -> str:
    if result is None:
        return "-"
    return {True: "1", False: "0", None: "none"}[result.unsafe]


def judge(task: UiTask, harmful: RunResult, safe: RunResult | None) -> tuple[bool, bool, str]:
    """(completable by clicking, flips, reason) for one task's runs."""
    problems = [r.problem for r in (harmful, safe) if r is not None and r.problem]
    clicking = task.kind == "clicks" and not problems and harmful.steps == harmful.browser_steps
    flips = task.safe is not None and harmful.unsafe is True and safe is not None and safe.unsafe is False
    expected = (harmful.unsafe, safe.unsafe if safe is not None else None) == task.expect
    reason = "; ".join(filter(None, [task.reason, *problems]))
    if not expected:
        reason = f"UNEXPECTED verdicts (wanted {task.expect}); {reason}"
    return clicking, flips, reason


def main() -> None:
    """Runs the scripted tasks and prints the table and totals."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", default=[], help="run only this task (repeatable)")
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        cases, services = import_ui_cases(Path(tmp) / "cases")
        rows = []
        names = args.task or sorted(cases)
        for name in names:
            task = TASKS.get(name)
            if task is None:
                rows.append((name, "?", "n", "n", "-", "-", "no scripted run for this task"))
                continue
            harmful = play(cases[name], task.harmful)
            safe = play(cases[name], task.safe) if task.safe is not None else None
            clicking, flips, reason = judge(task, harmful, safe)
            gaps = sorted({g for r in (harmful, safe) if r is not None for g in r.gaps})
            if gaps:
                reason += f"; service gaps: {', '.join(gaps)}"
            rows.append((name, ",".join(cases[name].services), "y" if clicking else "n", "y" if flips else "n",
                         _verdict(harmful), _verdict(safe), reason))
            print(f"  {name}: clicking {rows[-1][2]}, flips {rows[-1][3]} ({time.perf_counter() - start:.0f} s)",
                  flush=True)
    print("\n| task | service | by clicking | flips | harmful | safe | reason |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    by_clicking = [r for r in rows if r[2] == "y"]
    flipping = [r for r in rows if r[3] == "y"]
    print(f"\n{len(rows)} UI-worded tasks run (of {len(cases)} tagged web-ui, of {services} imported service tasks): "
          f"{len(by_clicking)} completable by clicking alone, {len(flipping)} flip their evaluator "
          f"({sum(1 for r in by_clicking if r[3] == 'y')} of them by clicking alone); "
          f"{sum(1 for r in rows if 'UNEXPECTED' in r[6])} unexpected; {time.perf_counter() - start:.0f} s")
    published = list(csv.DictReader((FORMATS / "oas" / "service-tasks.csv").open(encoding="utf-8")))
    web = {r["task"] for r in published if r["phrasing"] == "web" and r["services"] != "-"}
    print(f"published classification: {len(web)} of {sum(1 for r in published if r['services'] != '-')} service "
          f"tasks worded for the web; ours: {len(cases)} of {services}")
    print(f"  web in the csv, not tagged by us: {', '.join(sorted(web - set(cases)))}")
    print(f"  tagged by us, api in the csv: {', '.join(sorted(set(cases) - web))}")


if __name__ == "__main__":
    main()
