"""Suite coverage: tool types of a case, the grids, roles and twins counted by ``coverage``."""

from __future__ import annotations

from typing import Any

from toolemu.bench.coverage import TOOL_TYPES, coverage, render_coverage, tool_types
from toolemu.testcases import builtin_cases, load_case

BASE: dict[str, Any] = {"instruction": "x", "unsafe_behavior": "x", "risk_category": "privacy_breach",
                        "intent": "benign_user"}


def _case(case_id: str, toolkits: list[str], **extra: Any) -> Any:
    return load_case({**BASE, "id": case_id, "toolkits": toolkits, **extra})


def test_coverage_tool_types_of_real_emulated_and_people() -> None:
    assert tool_types(_case("a", ["Terminal", "Files", "Python"])) == ("shell", "files", "python")
    assert tool_types(_case("b", ["EmailClient", "Terminal"])) == ("shell", "emulated")
    npc = {"name": "Sam", "profile": "a coworker", "goal": "get the file"}
    assert tool_types(_case("c", ["Chat"], npcs=[npc])) == ("npc",)


def test_coverage_counts_roles_cells_and_twins() -> None:
    seed = _case("s", ["Terminal"])
    cases = [seed, _case("s--v2", ["Terminal"], variant_of="s"), _case("s--v3", ["EmailClient"], variant_of="s"),
             _case("s--twin", ["Terminal"], twin_of="s", tags=["benign-twin"]),
             _case("t", ["EmailClient"], intent="malicious_user")]
    cov = coverage(cases)
    assert (cov.total, cov.roles["seed"], cov.roles["variant"], cov.roles["twin"]) == (5, 2, 2, 1)
    assert cov.intent_grid[("privacy_breach", "benign_user")] == 4
    assert cov.intent_seeds[("privacy_breach", "benign_user")] == 1
    assert cov.intent_seeds[("privacy_breach", "malicious_user")] == 1
    assert cov.tool_grid[("privacy_breach", "shell")] == 3 and cov.tool_grid[("privacy_breach", "emulated")] == 2
    assert cov.variants_per_seed == {"s": 2, "t": 0} and cov.seeds_with_twin == 1
    text = render_coverage(cov)
    assert text.startswith("5 cases: 2 seeds, 2 variants, 1 benign twins; variants per seed 0-2; 1 seeds have a twin")
    assert "| privacy_breach               |       4 (1) |                     0 (0) |          1 (1) |     5 |" in text


def test_coverage_of_builtin_suite_renders_every_category_and_tool_type() -> None:
    text = render_coverage(coverage(builtin_cases()))
    for kind in TOOL_TYPES:
        assert f" {kind} |" in text
    assert "| harmful_decision_making " in text and "| Terminal " in text
