"""How often do the built-in rule checks classify runs as labelled? Replays runs through the real env (real
sandbox, schema-minimal emulator, fixed coworker replies, no language model) and prints tables by toolkit type,
label, style and the case's check families: right, left to the judge (a judged check has text to judge and no
rule check found harm), wrong.

Runs come from one of:
- the cases' own probe runs (default): in-sample, the checks were written with them;
- ``--runs DIR``: one ``<seed id>.yaml`` per seed, a list of runs (``label``, ``style``, ``actions``), replayed
  as that seed's runs; ``benchmarks/heldout_runs/`` holds 99 natural runs written from the cases' stories by
  someone who had not seen the checks (do not tune checks to them, or they stop being held out).

``--export DIR`` writes the seeds' probe runs as such a folder, so an older checkout (whose cases have no
probe runs) can score the same runs with its own checks: ``git worktree add /tmp/old <rev>`` then
``PYTHONPATH=/tmp/old python benchmarks/check_accuracy.py --runs DIR``.

    PYTHONPATH=. python benchmarks/check_accuracy.py [--runs benchmarks/heldout_runs] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from toolemu.bench.reference import replay_reference_runs
from toolemu.testcases import builtin_cases
from toolemu.testcases.schema import Case, ReferenceRun

_FAMILY = {"tool_called": "acts", "command_run": "acts", "message_sent": "acts", "value_leaked": "values",
           "judged": "judged", "python": "python", "final_answer_matches": "text"}


def _family(case: Case) -> str:
    return "+".join(sorted({_FAMILY.get(c.kind, "state") for c in case.checks})) or "none"


def _toolkit(case: Case) -> str:
    folder = Path(case.source_file or "").parent
    while folder.name and folder.name not in ("emulated", "real", "social"):
        folder = folder.parent
    return folder.name or "real"


def _seeds() -> list[Case]:
    return [c for c in builtin_cases() if c.variant_of is None and c.twin_of is None]


def _replay(case: Case, runs: list[dict[str, Any]] | None) -> list[tuple[dict[str, Any], Any]]:
    if runs is None:  # the case's own probe runs
        probes = [r.model_dump(mode="json") for r in case.probe_runs]
        only = case.model_copy(update={"reference_runs": ()})
        return list(zip(probes, replay_reference_runs(only), strict=True))
    refs = tuple(ReferenceRun.model_validate({k: v for k, v in r.items() if k != "style"}) for r in runs)
    update: dict[str, Any] = {"reference_runs": refs}
    if "probe_runs" in type(case).model_fields:
        update["probe_runs"] = ()
    return list(zip(runs, replay_reference_runs(case.model_copy(update=update)), strict=True))


def _table(rows: list[dict[str, Any]], key: str, title: str) -> None:
    groups: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    for row in rows:
        cell = groups[row[key]]
        cell[0] += 1
        cell[1 if row["outcome"] == "right" else 2 if row["outcome"] == "judge" else 3] += 1
    print(f"\n{title}\n| {key} | runs | right | left to the judge | wrong |\n|---|---|---|---|---|")
    for name in sorted(groups):
        n, right, judge, wrong = groups[name]
        print(f"| {name} | {n} | {right} | {judge} | {wrong} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, help="a folder of <seed id>.yaml run lists instead of the probe runs")
    parser.add_argument("--export", type=Path, help="write the seeds' probe runs to this folder and stop")
    parser.add_argument("--json", type=Path, help="also write one row per run as JSON")
    args = parser.parse_args()
    seeds = _seeds()
    if args.export is not None:
        args.export.mkdir(parents=True, exist_ok=True)
        for case in seeds:
            probes = [r.model_dump(mode="json", exclude_defaults=True) | {"label": r.label} for r in case.probe_runs]
            (args.export / f"{case.id}.yaml").write_text(yaml.safe_dump(probes, sort_keys=False), encoding="utf-8")
        print(f"wrote the probe runs of {len(seeds)} seeds to {args.export}")
        return
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for case in seeds:
        runs: list[dict[str, Any]] | None = None
        if args.runs is not None:
            source = args.runs / f"{case.id}.yaml"
            if not source.is_file():
                continue
            runs = yaml.safe_load(source.read_text(encoding="utf-8"))
        for run, verdict in _replay(case, runs):
            undecided = getattr(verdict, "undecided", False)
            outcome = "judge" if undecided else "right" if verdict.ok else "wrong"
            rows.append({"case": case.id, "toolkit": _toolkit(case), "label": run["label"],
                         "style": run.get("style", "-"), "family": _family(case), "outcome": outcome,
                         "problem": verdict.problem})
    if not rows:
        sys.exit("no runs to replay (no probe runs in these cases, or no matching files in --runs)")
    n = len(rows)
    right = sum(r["outcome"] == "right" for r in rows)
    judge = sum(r["outcome"] == "judge" for r in rows)
    print(f"{n} runs of {len({r['case'] for r in rows})} seeds in {time.perf_counter() - start:.0f} s: {right} right "
          f"({100 * right / n:.1f}%), {judge} left to the judge, {n - right - judge} wrong; of the runs the rules "
          f"decided, {100 * right / max(n - judge, 1):.1f}% right")
    for row in rows:
        row["toolkit_label"] = f"{row['toolkit']} {row['label']}"
    _table(rows, "toolkit_label", "By toolkit type and label")
    _table(rows, "style", "By style")
    _table(rows, "family", "By the case's check families")
    wrong = [r for r in rows if r["outcome"] == "wrong"]
    if wrong:
        print("\nWrong:")
        for r in wrong:
            print(f"  {r['case']} ({r['label']}, {r['style']}): {r['problem']}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
