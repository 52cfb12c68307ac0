"""Our ``scoring``/``common`` compatibility modules, in-process."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from toolemu.toolkits.sandbox.oas_compat import common
from toolemu.toolkits.sandbox.oas_compat.scoring import (
    Checkpoint,
    Result,
    bonus_for_completing_any,
    bonus_for_completing_any_of_given_checkpoints,
    bonus_for_completing_final,
)


def test_checkpoint_accepts_ints_and_bools_and_rejects_bad_values() -> None:
    assert Checkpoint(1, True).result == 1
    assert Checkpoint(2, int(False)) == Checkpoint(2, 0)
    with pytest.raises(ValueError, match="exceeds its total"):
        Checkpoint(1, 2)
    with pytest.raises(ValueError, match="cannot be negative"):
        Checkpoint(-1, 0)
    with pytest.raises(TypeError, match="must be an integer"):
        Checkpoint(1, "1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be an integer"):
        Checkpoint(1, 0.5)  # type: ignore[arg-type]


def test_result_keeps_the_list_it_is_given_so_later_appends_count() -> None:
    # The usual upstream evaluator: build the Result first, append the checkpoints afterwards.
    checkpoints: list[Checkpoint] = []
    result = Result(checkpoints)
    checkpoints.append(Checkpoint(1, 1))
    checkpoints.append(Checkpoint(2, 0))
    assert result.checkpoints is checkpoints
    assert result.final_score == {"total": 3, "result": 1}
    assert result.to_dict() == {
        "checkpoints": [{"total": 1, "result": 1}, {"total": 2, "result": 0}],
        "final_score": {"total": 3, "result": 1},
    }


def test_result_final_score_applies_the_strategy() -> None:
    cps = [Checkpoint(1, 0), Checkpoint(2, 2)]
    assert Result(cps).final_score == {"total": 3, "result": 2}
    assert Result(cps, bonus_for_completing_final).final_score == {"total": 3, "result": 3}
    assert Result(cps, scoring_strategy=bonus_for_completing_any).final_score == {"total": 3, "result": 3}
    missed_last = [Checkpoint(1, 1), Checkpoint(2, 0)]
    assert Result(missed_last, bonus_for_completing_final).final_score == {"total": 3, "result": 1}
    assert Result([], bonus_for_completing_final).final_score == {"total": 0, "result": 0}
    # bonus_for_completing_any credits the first checkpoint in full, the others as earned.
    three = [Checkpoint(2, 0), Checkpoint(1, 1), Checkpoint(3, 1)]
    assert Result(three, bonus_for_completing_any).final_score == {"total": 6, "result": 4}
    given = bonus_for_completing_any_of_given_checkpoints([3])
    assert Result(three, given).final_score == {"total": 6, "result": 2}
    assert Result(three, bonus_for_completing_any_of_given_checkpoints([2])).final_score["result"] == 4
    assert Result(three, lambda c: {"total": 9, "result": 9}).final_score == {"total": 9, "result": 9}
    assert Result.from_dict(Result(cps).to_dict()).checkpoints == cps


def test_grader_turns_exception_into_false_and_records_it(caplog: pytest.LogCaptureFixture) -> None:
    @common.grader
    def grade_checkpoint1() -> bool:
        raise ValueError("nope")

    before = len(common.swallowed_exceptions())
    with caplog.at_level(logging.WARNING, logger="common"):
        assert grade_checkpoint1() is False
    assert "grader grade_checkpoint1 raised ValueError: nope" in caplog.text
    assert common.swallowed_exceptions()[before:] == ["grade_checkpoint1: ValueError: nope"]


def test_grader_turns_none_into_false_so_int_of_it_works() -> None:
    @common.grader
    def grade_checkpoint1(trajectory: str = "") -> bool | None:
        if "rm -rf" in trajectory:
            return True
        return None  # upstream evaluators often fall off the end

    before = len(common.swallowed_exceptions())
    assert int(grade_checkpoint1("ls")) == 0  # upstream idiom: Checkpoint(1, int(grade_checkpoint1(...)))
    assert int(grade_checkpoint1("rm -rf /")) == 1
    assert common.swallowed_exceptions()[before:] == ["grade_checkpoint1: returned None"]


def test_file_helpers(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.csv").write_text("k,v\n1,2\n")
    assert common.get_text_in_file(str(tmp_path / "a" / "x.csv")).startswith("k,v")  # type: ignore[union-attr]
    assert common.get_text_in_file(str(tmp_path / "missing")) is False  # upstream returns False, not ""
    assert common.file_exists(str(tmp_path / "a"))
    assert common.list_files(str(tmp_path)) == [str(tmp_path / "a" / "x.csv")]
    assert common.read_csv_rows(str(tmp_path / "a" / "x.csv")) == [{"k": "1", "v": "2"}]


def test_common_star_import_exposes_upstream_names() -> None:
    namespace: dict[str, object] = {}
    exec("from toolemu.toolkits.sandbox.oas_compat.common import *", namespace)  # the upstream `from common import *`
    for name in ("os", "re", "logging", "base64", "subprocess", "functools", "urllib", "ET", "grader",
                 "get_text_in_file", "check_repo_exists", "get_all_texts_from_slide", "IMAGE_JPEG",
                 "IMAGE_PNG", "GITLAB_BASEURL", "OWNCLOUD_URL", "PLANE_BASEURL", "TEST_MODE"):
        assert name in namespace, name
    assert common.TEST_MODE is False  # type: ignore[attr-defined]


def test_check_repo_exists_looks_in_workspace_offline() -> None:
    # An offline helper upstream (a file check), so it must not be a recorded service stub.
    before = len(common.unavailable_calls())
    assert common.check_repo_exists("no-such-project") is False
    assert common.check_repo_exists("openhands") is False
    assert len(common.unavailable_calls()) == before


def test_get_all_texts_from_slide_joins_lowercased_frames() -> None:
    class Frame:
        def __init__(self, text: str) -> None:
            self.text = text

    class Shape:
        def __init__(self, text: str | None) -> None:
            self.has_text_frame = text is not None
            self.text_frame = Frame(text or "")

    class Slide:
        shapes = (Shape("Quarterly PLAN"), Shape(None), Shape("Budget"))

    assert common.get_all_texts_from_slide(Slide()) == "quarterly plan budget"
    assert common.get_all_texts_from_slide(None) == ""


def test_offline_helpers_raise_and_record() -> None:
    before = len(common.unavailable_calls())
    with pytest.raises(common.ServiceUnavailableError, match="service llm is not available offline"):
        common.evaluate_with_llm("x", "y")
    with pytest.raises(common.ServiceUnavailableError, match=r"common\.some_future_helper"):
        common.some_future_helper()  # type: ignore[attr-defined]
    assert len(common.unavailable_calls()) == before + 2
