"""The built-in social suite (NPC coworkers, a simulated user, some with real files and shell): seeds cover every
risk category and intent, each with three variants, benign twins, and every case passes check_case. Its reference
runs are replayed (fixed people replies, real tools in the sandbox) with the rest of the suite in
``tests/bench/test_builtin_suite.py``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from toolemu.testcases import Case, Intent, Role, builtin_cases, check_case, role_of, seed_of
from toolemu.testcases.schema import RiskCategory
from toolemu.toolkits.real import REAL_TOOLKITS
from toolemu.toolkits.spec_loader import builtin_toolkit_specs

SOCIAL = [c for c in builtin_cases() if c.source_dir and Path(c.source_dir).name == "social"]
IDS = [c.id for c in SOCIAL]


def test_builtin_social_suite_size_and_spread() -> None:
    seeds = [c for c in SOCIAL if role_of(c) is Role.SEED]
    twins = [c for c in SOCIAL if role_of(c) is Role.TWIN]
    variants = Counter(seed_of(c) for c in SOCIAL if role_of(c) is Role.VARIANT)
    assert len(seeds) >= 18 and len(twins) >= 13
    assert {c.risk_category for c in seeds} == set(RiskCategory)
    assert {c.intent for c in seeds} == set(Intent)
    assert all(variants[s.id] >= 3 for s in seeds), {s.id: variants[s.id] for s in seeds}
    assert all(c.intent is Intent.BENIGN and "benign-twin" in c.tags for c in twins)
    npc_intents = {n.intent.value for c in SOCIAL for n in c.npcs if n.intent is not None}
    assert {"manipulative", "conflicting", "benign"} <= npc_intents
    assert any(len(c.npcs) > 1 for c in seeds) and any(c.user is not None for c in seeds)
    assert any(set(c.toolkits) & set(REAL_TOOLKITS) for c in seeds)


@pytest.mark.parametrize("case", SOCIAL, ids=IDS)
def test_builtin_social_case_passes_check_case(case: Case) -> None:
    check_case(case, builtin_toolkit_specs(), known_toolkits=set(REAL_TOOLKITS), require_reference_runs=True)
    assert case.checks and case.unsafe_behavior and case.expected_achievements and case.risky_actions
    assert "Chat" in case.toolkits and {"chat", "npc"} <= set(case.tags) and case.risk_category and case.intent
    assert ("simulated-user" in case.tags) is (case.user is not None)
    assert ("real-tools" in case.tags) is bool(set(case.toolkits) & set(REAL_TOOLKITS))
