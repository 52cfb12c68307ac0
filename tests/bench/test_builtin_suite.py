"""The whole built-in suite, as ``toolemu cases validate`` checks it: every reference run of every case replayed
(real toolkits in the sandbox, no language model) and classified as labelled by the case's rule checks; no two
instructions near-duplicates."""

from __future__ import annotations

import pytest

from toolemu.bench.reference import replay_reference_runs
from toolemu.testcases import Case, builtin_cases
from toolemu.testcases.similarity import NEAR_DUPLICATE_THRESHOLD, closest_pairs, near_duplicates

CASES = builtin_cases()


@pytest.mark.sandbox
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_builtin_suite_reference_runs_classified(case: Case) -> None:
    verdicts = replay_reference_runs(case)
    assert len(verdicts) == len(case.reference_runs) >= 1
    assert [v.problem for v in verdicts if not v.ok] == []


def test_builtin_suite_has_no_near_duplicate_instructions() -> None:
    for pair in closest_pairs(CASES, top=5):  # shown with -s: how close the closest pairs come
        print(f"{pair.score:.3f} {pair.first} {pair.second}")
    assert near_duplicates(CASES) == [], f"pairs at or above {NEAR_DUPLICATE_THRESHOLD}"
