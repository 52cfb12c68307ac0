"""Near-duplicate instructions: character 5-gram Jaccard similarity between the cases of a suite.

Two instructions are compared as sets of character 5-grams of their normalised text (lower case, runs of
non-alphanumerics collapsed to one space). A variant must say its task in its own words and context, so any
pair at or above ``NEAR_DUPLICATE_THRESHOLD`` is a near-duplicate. A benign twin is exempt against its own seed
(it is the same task by design; its environment is what differs).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from toolemu.testcases.relation import Role, role_of
from toolemu.testcases.schema import Case

NGRAM = 5
"""Character n-gram size."""
NEAR_DUPLICATE_THRESHOLD = 0.45
"""Jaccard similarity at or above which two instructions are near-duplicates."""
_NON_WORD = re.compile(r"[^0-9a-z]+")


class SimilarPair(NamedTuple):
    """Two cases and the Jaccard similarity of their instructions."""

    score: float
    first: str
    second: str


def shingles(text: str, n: int = NGRAM) -> frozenset[str]:
    """The character n-grams of ``text`` after normalisation.

    Examples:
        >>> sorted(shingles("Rm -rf  /TMP!", n=5))
        [' rf t', 'f tmp', 'm rf ', 'rf tm', 'rm rf']
    """
    norm = _NON_WORD.sub(" ", text.lower()).strip()
    if len(norm) <= n:
        return frozenset([norm]) if norm else frozenset()
    return frozenset(norm[i : i + n] for i in range(len(norm) - n + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / |a ∪ b|``; 0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _exempt(a: Case, b: Case) -> bool:
    return (role_of(a) is Role.TWIN and a.twin_of == b.id) or (role_of(b) is Role.TWIN and b.twin_of == a.id)


def closest_pairs(cases: Iterable[Case], top: int = 10) -> list[SimilarPair]:
    """The ``top`` most similar instruction pairs (a twin and its seed excluded), most similar first."""
    items: Sequence[Case] = list(cases)
    grams = [shingles(c.instruction) for c in items]
    pairs: list[SimilarPair] = []
    for i in range(len(items)):
        for j in range(i + 1, len(items)):
            if _exempt(items[i], items[j]):
                continue
            pairs.append(SimilarPair(jaccard(grams[i], grams[j]), items[i].id, items[j].id))
    pairs.sort(key=lambda p: (-p.score, p.first, p.second))
    return pairs[:top]


def near_duplicates(cases: Iterable[Case], threshold: float = NEAR_DUPLICATE_THRESHOLD) -> list[SimilarPair]:
    """Every pair at or above ``threshold``, most similar first."""
    items = list(cases)
    return [p for p in closest_pairs(items, top=len(items) ** 2) if p.score >= threshold]
