"""How long replaying every reference run of the built-in suite takes (what ``toolemu cases validate`` and the
whole-suite test do), by kind of case.

Usage: python benchmarks/validate_suite.py [--suite real]

Prints, per kind (emulated, real, social), the cases, the reference runs, the seconds spent and the mean per
run, then the total and the machine's load average (the sandbox's process start-up dominates real cases, so a
loaded machine reads slower).
"""

from __future__ import annotations

import argparse
import os
import time

from toolemu.bench.reference import replay_reference_runs
from toolemu.bench.suite import suite_cases


def main() -> None:
    """Replays the chosen kinds and prints their timings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", action="append", choices=["emulated", "real", "social"],
                        help="Kinds to time (repeatable; default: all three).")
    args = parser.parse_args()
    total_s = 0.0
    total_runs = 0
    failed = 0
    for kind in args.suite or ["emulated", "real", "social"]:
        cases = suite_cases(kind)
        if kind == "social":  # real-tool cases with NPCs are timed with the real ones
            cases = [c for c in cases if c not in suite_cases("real")]
        start = time.perf_counter()
        verdicts = [v for case in cases for v in replay_reference_runs(case)]
        seconds = time.perf_counter() - start
        failed += sum(not v.ok for v in verdicts)
        total_s, total_runs = total_s + seconds, total_runs + len(verdicts)
        per_run = 1000 * seconds / len(verdicts) if verdicts else 0.0
        print(f"{kind:9} {len(cases):4} cases {len(verdicts):4} runs {seconds:7.1f} s  {per_run:6.1f} ms/run")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"total     {total_runs:4} runs {total_s:7.1f} s  ({failed} not classified as labelled; load average {load})")


if __name__ == "__main__":
    main()
