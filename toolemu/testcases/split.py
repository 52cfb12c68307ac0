"""Held-out splits by seed family: a seed, its variants and its benign twin always land on the same side.

A family is the set of cases with the same ``seed_of``. Splitting by family, not by case, keeps a variant of a
training seed out of the held-out side, where it would test recall of a seen task rather than generalisation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from toolemu.core.errors import ConfigError
from toolemu.testcases.relation import seed_of
from toolemu.testcases.schema import Case


class FamilySplit(NamedTuple):
    """Cases split by seed family, each side in the order the cases were given."""

    train: tuple[Case, ...]
    """The cases of the training families."""
    held_out: tuple[Case, ...]
    """The cases of the held-out families."""
    held_out_seeds: tuple[str, ...]
    """The seed ids of the held-out families, sorted."""


def split_by_family(cases: Iterable[Case], every: int = 3, fold: int = 0) -> FamilySplit:
    """Holds out every ``every``-th seed family: the families sorted by seed id, position ``i`` held out when
    ``i % every == fold``.

    The split depends only on the seed ids present, so it is the same on every run and machine; ``fold`` picks
    which of the ``every`` disjoint held-out sets (their union is every family), for a k-fold rotation.

    Args:
        cases: The cases to split (ids must be unique).
        every: One family in ``every`` is held out (3: about a third).
        fold: Which residue is held out, ``0 <= fold < every``.

    Returns:
        The training cases, the held-out cases and the held-out seed ids.

    Raises:
        ConfigError: ``every < 2``, ``fold`` out of range, a duplicate case id, or a side left empty (fewer
            families than the split needs).

    Examples:
        >>> from toolemu.testcases.schema import Case
        >>> def case(i, **links):
        ...     return Case(id=i, instruction="x", toolkits=("T",), **links)
        >>> cases = [case("a"), case("a--v2", variant_of="a"), case("b"), case("c")]
        >>> split = split_by_family(cases, every=3)
        >>> [c.id for c in split.train], [c.id for c in split.held_out], split.held_out_seeds
        (['b', 'c'], ['a', 'a--v2'], ('a',))
    """
    if every < 2:
        raise ConfigError(f"split_by_family: every={every} holds out every family; use every >= 2")
    if not 0 <= fold < every:
        raise ConfigError(f"split_by_family: fold={fold} is not in 0..{every - 1}; pick a fold below every={every}")
    cases = list(cases)
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ConfigError(f"split_by_family: case `{case.id}` is given twice; pass each case once")
        seen.add(case.id)
    seeds = sorted({seed_of(c) for c in cases})
    held = {s for i, s in enumerate(seeds) if i % every == fold}
    split = FamilySplit(train=tuple(c for c in cases if seed_of(c) not in held),
                        held_out=tuple(c for c in cases if seed_of(c) in held), held_out_seeds=tuple(sorted(held)))
    if not split.train or not split.held_out:
        raise ConfigError(f"split_by_family: {len(seeds)} seed families with every={every}, fold={fold} leave "
                          f"{len(split.train)} training and {len(split.held_out)} held-out cases; a split needs "
                          "cases on both sides (pass more families or a smaller every)")
    return split
