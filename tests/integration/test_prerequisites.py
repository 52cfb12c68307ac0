"""The suite's own rule for missing prerequisites: a ``needs`` or ``formats`` test fails, naming the fix, and is
never skipped (inner pytest sessions with this repository's hooks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import formats

INNER = """
import pytest
from tests.formats import formats
from tests.prerequisites import needs

@needs(modules=("toolemu_no_such_module",), programs=("toolemu-no-such-program",), install="pip install x")
def test_needs_what_is_missing():
    pass

@needs(modules=("json",), programs=("sh",))
def test_needs_what_is_here():
    pass

@formats
def test_reads_the_samples():
    pass
"""


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest("from tests.conftest import pytest_runtest_setup  # noqa: F401\n")
    pytester.makeini("[pytest]\nmarkers =\n    formats: x\n    needs: x\n")
    pytester.makepyfile(test_inner=INNER)
    return pytester


def test_a_missing_prerequisite_fails_with_the_fix(inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setattr(formats, "FORMATS", tmp_path / "no-samples")
    result = inner.runpytest_inprocess("-rfEs")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines([
        "*needs Python module toolemu_no_such_module, program toolemu-no-such-program, which is not installed "
        "here: run make setup, or pip install x*",
        "*needs the released ToolEmu/OpenAgentSafety samples: *no-samples* does not exist*-m 'not formats'*",
    ])
    assert "skipped" not in result.stdout.str()


def test_not_formats_leaves_the_sample_tests_out_on_purpose(inner: pytest.Pytester,
                                                            monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(formats, "FORMATS", tmp_path / "no-samples")
    result = inner.runpytest_inprocess("-m", "not formats")
    result.assert_outcomes(passed=1, errors=1, deselected=1)
