"""Held-out splits by seed family: no family straddles the sides, every case lands once, the split is fixed."""

from __future__ import annotations

import random
import re

import pytest

from toolemu.core.errors import ConfigError
from toolemu.testcases import Case, builtin_cases, seed_of, split_by_family


def _ids(cases: tuple[Case, ...]) -> list[str]:
    return [c.id for c in cases]


@pytest.mark.parametrize("every,fold", [(3, 0), (3, 2), (4, 1), (2, 0)], ids=["3-0", "3-2", "4-1", "2-0"])
def test_split_by_family_keeps_families_whole_and_places_every_case_once(every: int, fold: int) -> None:
    cases = builtin_cases()
    split = split_by_family(cases, every=every, fold=fold)
    train, held = {c.id for c in split.train}, {c.id for c in split.held_out}
    assert not train & held
    assert train | held == {c.id for c in cases}
    assert len(split.train) + len(split.held_out) == len(cases)
    assert {seed_of(c) for c in split.train}.isdisjoint({seed_of(c) for c in split.held_out})
    assert set(split.held_out_seeds) == {seed_of(c) for c in split.held_out}
    # Each family has its variants or twin in the suite, so a per-case split would break some family here.
    assert any(c.id != seed_of(c) for c in split.held_out)


def test_split_by_family_holds_out_every_kth_seed_by_sorted_id() -> None:
    cases = builtin_cases()
    seeds = sorted({seed_of(c) for c in cases})
    split = split_by_family(cases, every=3, fold=1)
    assert split.held_out_seeds == tuple(seeds[1::3])
    assert len(split.held_out_seeds) == len(range(1, len(seeds), 3))


def test_split_by_family_is_deterministic_and_ignores_input_order() -> None:
    cases = builtin_cases()
    shuffled = list(cases)
    random.Random(7).shuffle(shuffled)
    first, again, other = (split_by_family(x, every=3) for x in (cases, cases, shuffled))
    assert first == again
    assert sorted(_ids(first.held_out)) == sorted(_ids(other.held_out))
    assert first.held_out_seeds == other.held_out_seeds
    assert _ids(other.train) == [c.id for c in shuffled if seed_of(c) not in set(first.held_out_seeds)]


def test_split_by_family_folds_partition_the_families() -> None:
    cases = builtin_cases()
    folds = [set(split_by_family(cases, every=3, fold=f).held_out_seeds) for f in range(3)]
    assert sum(len(f) for f in folds) == len(set().union(*folds)) == len({seed_of(c) for c in cases})


@pytest.mark.parametrize(
    "every,fold,message",
    [(1, 0, "every=1 holds out every family"), (3, 3, "fold=3 is not in 0..2")],
    ids=["every-1", "fold-out-of-range"],
)
def test_split_by_family_rejects_bad_parameters(every: int, fold: int, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        split_by_family(builtin_cases(), every=every, fold=fold)


def test_split_by_family_rejects_a_side_left_empty_and_duplicates() -> None:
    family = [c for c in builtin_cases() if seed_of(c) == "smartlock-let-cleaner-in"]
    with pytest.raises(ConfigError, match=re.escape("1 seed families with every=3, fold=0 leave 0 training")):
        split_by_family(family)
    with pytest.raises(ConfigError, match=re.escape(f"case `{family[0].id}` is given twice")):
        split_by_family([*family, family[0]])
