"""What a suite covers: risk category × intent, risk category × tool type, toolkits, seeds/variants/twins.

``toolemu cases stats`` prints ``render_coverage(coverage(cases))``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from toolemu.bench.suite import needs_sandbox
from toolemu.core.people import CHAT_TOOLKIT
from toolemu.testcases import Case, Intent, RiskCategory, Role, role_of, seed_of
from toolemu.testcases.oas import DEFECT_TAG, STANDIN_TAG
from toolemu.testcases.schema import SERVICES, ServiceStateCheck

READS_TAG = "evaluator-reads:"
"""Prefix of the tag naming a service an imported OAS evaluator reads."""

TOOL_TYPES: tuple[str, ...] = ("shell", "files", "python", "browser", "emulated", "npc", "user")
"""Tool types of the grid: the four sandboxed toolkits, emulated apps, NPC coworkers, a simulated user."""
_REAL_TYPES = {"Terminal": "shell", "Files": "files", "Python": "python", "Browser": "browser"}


def tool_types(case: Case) -> tuple[str, ...]:
    """The tool types a case exercises, in ``TOOL_TYPES`` order."""
    found: set[str] = set()
    sandboxed = {n for n in case.toolkits
                 if n in _REAL_TYPES and needs_sandbox(case.model_copy(update={"toolkits": (n,)}))}
    found |= {_REAL_TYPES[n] for n in sandboxed}
    if any(n not in sandboxed and n != CHAT_TOOLKIT for n in case.toolkits):
        found.add("emulated")
    if case.npcs:
        found.add("npc")
    if case.user is not None:
        found.add("user")
    return tuple(t for t in TOOL_TYPES if t in found)


class Coverage(NamedTuple):
    """Counts over a suite; grid cells are keyed by enum values (``"-"`` for an unlabelled case)."""

    total: int
    roles: Counter[str]
    """Cases by role: seed, variant, twin."""
    intent_grid: Counter[tuple[str, str]]
    """(risk category, intent) -> cases."""
    intent_seeds: Counter[tuple[str, str]]
    """(risk category, intent) -> seeds."""
    tool_grid: Counter[tuple[str, str]]
    """(risk category, tool type) -> cases."""
    toolkits: Counter[str]
    """Toolkit -> cases naming it."""
    variants_per_seed: dict[str, int]
    """Seed id -> number of its variants (seeds with none included)."""
    seeds_with_twin: int
    services: dict[str, Counter[str]]
    """Service -> counts of the cases needing it: ``cases``, ``rule`` (its evaluator, or a ``service_state``
    check, reads the service and works),
    ``standin`` (depends on content we wrote), ``defect`` (its upstream evaluator cannot tell safe from unsafe)."""
    defects: int
    """Cases whose upstream evaluator is defective (tag ``evaluator-defect``): kept out of rule-verdict counts."""


def _label(value: RiskCategory | Intent | None) -> str:
    return value.value if value is not None else "-"


def coverage(cases: Iterable[Case]) -> Coverage:
    """Counts the cases by role, grid cell, tool type and toolkit."""
    cases = list(cases)
    roles: Counter[str] = Counter(role_of(c).value for c in cases)
    intent_grid: Counter[tuple[str, str]] = Counter()
    intent_seeds: Counter[tuple[str, str]] = Counter()
    tool_grid: Counter[tuple[str, str]] = Counter()
    toolkits: Counter[str] = Counter()
    variants = {c.id: 0 for c in cases if role_of(c) is Role.SEED}
    twins: set[str] = set()
    for case in cases:
        cell = (_label(case.risk_category), _label(case.intent))
        intent_grid[cell] += 1
        role = role_of(case)
        if role is Role.SEED:
            intent_seeds[cell] += 1
        elif role is Role.VARIANT:
            variants[seed_of(case)] = variants.get(seed_of(case), 0) + 1
        else:
            twins.add(seed_of(case))
        for kind in tool_types(case):
            tool_grid[(cell[0], kind)] += 1
        toolkits.update(set(case.toolkits))
    services: dict[str, Counter[str]] = {s: Counter() for s in SERVICES}
    for case in cases:
        defective = DEFECT_TAG in case.tags
        for name in case.services:
            counts = services[name]
            counts["cases"] += 1
            counts["standin"] += STANDIN_TAG in case.tags
            counts["defect"] += defective
            counts["rule"] += (f"{READS_TAG}{name}" in case.tags and not defective) or any(
                isinstance(check, ServiceStateCheck) and check.service == name for check in case.checks)
    return Coverage(len(cases), roles, intent_grid, intent_seeds, tool_grid, toolkits, variants,
                    len(twins & set(variants)), services, sum(DEFECT_TAG in c.tags for c in cases))


def _rows(cov: Coverage) -> list[str]:
    labelled = [c.value for c in RiskCategory]
    extra = sorted({k[0] for k in cov.intent_grid} - set(labelled))
    return labelled + extra


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        cells = (v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths, strict=True)))
        return "| " + " | ".join(cells) + " |"

    sep = "|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    return [line(header), sep, *(line(r) for r in rows)]


def render_coverage(cov: Coverage) -> str:
    """The stats as Markdown tables: roles, category × intent (cases, seeds in brackets), category × tool type,
    toolkits."""
    per_seed = list(cov.variants_per_seed.values())
    spread = f"{min(per_seed)}-{max(per_seed)}" if per_seed else "-"
    out = [
        f"{cov.total} cases: {cov.roles['seed']} seeds, {cov.roles['variant']} variants, {cov.roles['twin']} benign "
        f"twins; variants per seed {spread}; {cov.seeds_with_twin} seeds have a twin",
        "",
        "Risk category x intent: cases (seeds)",
        "",
    ]
    intents = [i.value for i in Intent]
    rows = _rows(cov)
    out += _table(["risk category", *intents, "total"], [
        [r, *(f"{cov.intent_grid[(r, i)]} ({cov.intent_seeds[(r, i)]})" for i in intents),
         str(sum(cov.intent_grid[(r, i)] for i in [*intents, "-"]))]
        for r in rows
    ])
    out += ["", "Risk category x tool type: cases", ""]
    out += _table(["risk category", *TOOL_TYPES],
                  [[r, *(str(cov.tool_grid[(r, t)]) for t in TOOL_TYPES)] for r in rows])
    out += ["", "Toolkits: cases", ""]
    out += _table(["toolkit", "cases"], [[name, str(n)] for name, n in sorted(cov.toolkits.items())])
    if any(c["cases"] for c in cov.services.values()):
        out += ["", "Services: cases needing each; rule verdicts = its evaluator or a service_state check reads the "
                    "service and works "
                    f"({cov.defects} cases with a defective upstream evaluator left out)", ""]
        out += _table(["service", "cases", "rule verdicts", "stand-in content", "evaluator defect"], [
            [name, *(str(c[k]) for k in ("cases", "rule", "standin", "defect"))]
            for name, c in cov.services.items()
        ])
    return "\n".join(out) + "\n"
