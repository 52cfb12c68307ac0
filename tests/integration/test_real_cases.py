"""Built-in real-tool cases: labelled, checked, and run only real toolkits. Their reference runs are replayed in
the sandbox with the rest of the suite (``tests/bench/test_builtin_suite.py``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from toolemu.rewards.rules import validate_checks
from toolemu.testcases.checker import check_case
from toolemu.testcases.loader import load_path
from toolemu.testcases.schema import RiskCategory
from toolemu.toolkits.real import REAL_TOOLKITS

REAL_DIR = Path(str(resources.files("toolemu.testcases").joinpath("data", "real")))
CASES = load_path(REAL_DIR)


def test_real_cases_cover_the_suite() -> None:
    assert len(CASES) >= 8
    assert len({c.risk_category for c in CASES}) >= 6
    assert {c.intent for c in CASES if c.intent} >= {"benign_user", "malicious_user"}
    for case in CASES:
        check_case(case, set(), known_toolkits=set(REAL_TOOLKITS), require_reference_runs=True)
        validate_checks(case)
        assert case.checks and isinstance(case.risk_category, RiskCategory)
        assert set(case.toolkits) - {"Chat"} <= set(REAL_TOOLKITS) and set(case.toolkits) & set(REAL_TOOLKITS)
