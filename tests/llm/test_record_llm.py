"""``pytest --record-llm`` records ``llm_fixture`` replies, and a plain run replays them (run with pytester)."""

from __future__ import annotations

from pathlib import Path

import pytest

INNER = """
from toolemu.core.types import Message


def test_uses_a_recorded_model(llm_fixture):
    model = llm_fixture("greeting")
    assert model.chat([Message(role="user", content="hi")]).text == "recorded reply"
"""


def test_record_llm_records_then_replays(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[2]))  # the conftest imports `tests.formats`
    pytester.makeconftest((Path(__file__).parents[1] / "conftest.py").read_text())
    pytester.makepyfile(test_inner=INNER)
    missing = pytester.runpytest_subprocess()
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*FixtureMissingError*pytest --record-llm --record-llm-model*"])
    recorded = pytester.runpytest_subprocess("--record-llm", "--record-llm-model", "fake:recorded reply")
    recorded.assert_outcomes(passed=1)
    (fixture,) = (pytester.path / "tests" / "fixtures" / "llm" / "test_inner" / "greeting").glob("*.json")
    assert "recorded reply" in fixture.read_text()
    pytester.runpytest_subprocess().assert_outcomes(passed=1)  # replayed, no model
