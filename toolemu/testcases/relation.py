"""Seeds, variants and benign twins: the id conventions and the links between cases (``variant_of``, ``twin_of``).

A seed is a case with neither link. A variant ``<seed>--v<N>`` (N >= 2) keeps its seed's risk and intent in a
different context. A benign twin ``<case>--twin`` is the same task without the risky element: it keeps the
seed's risk category (the risk it is the twin of), has intent ``benign_user`` and the tag ``benign-twin``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum

from toolemu.core.errors import CaseError
from toolemu.testcases.schema import Case, Intent

TWIN_TAG = "benign-twin"
"""The tag every benign twin carries."""
VARIANT_SUFFIX = re.compile(r"^(?P<seed>.+)--v(?P<n>[0-9]+)$")
TWIN_SUFFIX = "--twin"


class Role(StrEnum):
    """What a case is in the suite."""

    SEED = "seed"
    VARIANT = "variant"
    TWIN = "twin"


def role_of(case: Case) -> Role:
    """Whether ``case`` is a seed, a variant or a benign twin (by its links)."""
    if case.twin_of is not None:
        return Role.TWIN
    if case.variant_of is not None:
        return Role.VARIANT
    return Role.SEED


def seed_of(case: Case) -> str:
    """The id of the seed a case belongs to: its own id for a seed, the linked id otherwise."""
    return case.twin_of or case.variant_of or case.id


def _where(case: Case, source: str | None = None) -> str:
    origin = source or case.source_file or case.source_dir
    return (f"{origin}: " if origin else "") + f"case `{case.id}`"


def check_labels(case: Case, source: str | None = None) -> None:
    """Checks one case's own links: its id matches them, and a twin is labelled as one.

    Raises:
        CaseError: One line naming the file, the case and the field.
    """
    where = _where(case, source)
    if case.variant_of is not None and case.twin_of is not None:
        raise CaseError(f"{where}: twin_of: a case is a variant or a twin, not both; remove variant_of or twin_of")
    match = VARIANT_SUFFIX.match(case.id)
    if case.variant_of is not None:
        if match is None or match["seed"] != case.variant_of or int(match["n"]) < 2:
            raise CaseError(f"{where}: id: a variant of `{case.variant_of}` is named `{case.variant_of}--v<N>` "
                            "(N >= 2, e.g. `--v2`); rename it or fix variant_of")
    elif match is not None and case.twin_of is None:
        raise CaseError(f"{where}: variant_of: the id names a variant of `{match['seed']}`; "
                        f"add `variant_of: {match['seed']}` or rename the case")
    if case.twin_of is not None:
        if case.id != case.twin_of + TWIN_SUFFIX:
            raise CaseError(f"{where}: id: the twin of `{case.twin_of}` is named `{case.twin_of}{TWIN_SUFFIX}`; "
                            "rename it or fix twin_of")
        if case.intent is not Intent.BENIGN:
            value = case.intent.value if case.intent else None
            raise CaseError(f"{where}: intent: a benign twin has intent `{Intent.BENIGN.value}`, got {value!r}")
        if TWIN_TAG not in case.tags:
            raise CaseError(f"{where}: tags: a benign twin carries the tag `{TWIN_TAG}`; add it")
    else:
        if case.id.endswith(TWIN_SUFFIX):
            seed = case.id.removesuffix(TWIN_SUFFIX)
            raise CaseError(f"{where}: twin_of: the id names the twin of `{seed}`; add `twin_of: {seed}` or "
                            "rename the case")
        if TWIN_TAG in case.tags:
            raise CaseError(f"{where}: tags: `{TWIN_TAG}` is for benign twins; set twin_of or remove the tag")


def relation_problems(cases: Iterable[Case], resolve: Callable[[str], Case | None] | None = None) -> list[str]:
    """The problems with the links between cases, one line each (see ``check_relations``)."""
    cases = list(cases)
    by_id: Mapping[str, Case] = {c.id: c for c in cases}
    problems: list[str] = []
    for case in cases:
        problem = _link_problem(case, by_id, resolve)
        if problem:
            problems.append(f"{_where(case)}: {problem}")
    return problems


def _link_problem(case: Case, by_id: Mapping[str, Case], resolve: Callable[[str], Case | None] | None) -> str | None:
    role = role_of(case)
    if role is Role.SEED:
        return None
    field = "twin_of" if role is Role.TWIN else "variant_of"
    target_id = seed_of(case)
    target = by_id.get(target_id) or (resolve(target_id) if resolve else None)
    if target is None:
        return f"{field}: `{target_id}` names no case loaded with it (nor a built-in one); fix the id or load the seed"
    if role_of(target) is not Role.SEED:
        return f"{field}: `{target_id}` is a {role_of(target).value}, not a seed; name its seed `{seed_of(target)}`"
    if case.risk_category != target.risk_category:
        mine = case.risk_category.value if case.risk_category else None
        theirs = target.risk_category.value if target.risk_category else None
        return (f"risk_category: {mine!r} differs from its seed `{target_id}` ({theirs!r}); a variant or twin keeps "
                "the seed's risk category")
    if role is Role.VARIANT and case.intent != target.intent:
        mine = case.intent.value if case.intent else None
        theirs = target.intent.value if target.intent else None
        return f"intent: {mine!r} differs from its seed `{target_id}` ({theirs!r}); a variant keeps the seed's intent"
    return None


def check_relations(cases: Iterable[Case], resolve: Callable[[str], Case | None] | None = None) -> None:
    """Checks the links between cases: each ``variant_of``/``twin_of`` names an existing seed with the same risk.

    Args:
        cases: The cases loaded together.
        resolve: Looks up an id missing from ``cases`` (the built-in suite, so a user's variant may name a
            built-in seed); ``None`` resolves nothing else.

    Raises:
        CaseError: One line naming the file, the case, the field and the missing or mismatched target.
    """
    problems = relation_problems(cases, resolve)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CaseError(problems[0] + more)


def check_twin_runs(case: Case) -> None:
    """A benign twin has a safe, helpful reference run (what a good agent does once the risk is gone).

    Raises:
        CaseError: the twin has no such run.
    """
    if role_of(case) is Role.TWIN and not any(r.label == "safe" and r.is_helpful for r in case.reference_runs):
        raise CaseError(f"{_where(case)}: reference_runs: a benign twin needs a `safe` run that is helpful "
                        "(helpful: true or unset)")
