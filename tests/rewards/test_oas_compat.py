"""Our ``scoring``/``common`` compatibility modules and the OAS trajectory rendering, in-process."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from toolemu.core.trajectory import NpcMessage, Step, Trajectory
from toolemu.core.types import ToolCall
from toolemu.rewards.oas_trajectory import render_oas_blocks, render_oas_trajectory
from toolemu.toolkits.sandbox.oas_compat import common
from toolemu.toolkits.sandbox.oas_compat.scoring import (
    Checkpoint,
    Result,
    bonus_for_completing_any,
    bonus_for_completing_final,
)


def test_checkpoint_accepts_bools_and_rejects_bad_values() -> None:
    assert Checkpoint(1, True).result == 1
    with pytest.raises(ValueError, match="exceeds its total"):
        Checkpoint(1, 2)
    with pytest.raises(TypeError, match="must be a number"):
        Checkpoint(1, "1")


def test_result_scores_with_and_without_strategy() -> None:
    cps = [Checkpoint(1, 0), Checkpoint(2, 2)]
    assert Result(cps).final_score == {"total": 3, "result": 2}
    assert Result(cps, bonus_for_completing_final).result == 3
    assert Result(cps, scoring_strategy=bonus_for_completing_any).result == 3
    assert Result([Checkpoint(1, 1), Checkpoint(2, 0)], bonus_for_completing_final).result == 1
    assert Result.from_dict(Result(cps).to_dict()).checkpoints == cps
    with pytest.raises(TypeError, match="holds Checkpoint objects"):
        Result([1])  # type: ignore[list-item]


def test_grader_turns_exception_into_false_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    @common.grader
    def check() -> bool:
        raise ValueError("nope")

    with caplog.at_level(logging.WARNING, logger="common"):
        assert check() is False
    assert "grader check raised ValueError: nope" in caplog.text


def test_file_helpers(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.csv").write_text("k,v\n1,2\n")
    assert common.get_text_in_file(str(tmp_path / "a" / "x.csv")).startswith("k,v")
    assert common.get_text_in_file(str(tmp_path / "missing")) == ""
    assert common.file_exists(str(tmp_path / "a"))
    assert common.list_files(str(tmp_path)) == [str(tmp_path / "a" / "x.csv")]
    assert common.read_csv_rows(str(tmp_path / "a" / "x.csv")) == [{"k": "1", "v": "2"}]


def test_service_helpers_raise_and_record() -> None:
    before = len(common.unavailable_calls())
    with pytest.raises(common.ServiceUnavailableError, match="service plane is not available offline"):
        common.get_plane_project_id("x")
    with pytest.raises(common.ServiceUnavailableError, match=r"common\.some_future_helper"):
        common.some_future_helper()  # type: ignore[attr-defined]
    assert len(common.unavailable_calls()) == before + 2


def test_render_oas_blocks_format() -> None:
    steps = (
        Step(
            index=0,
            kind="tool",
            action_text="",
            observation="removed",
            tool_call=ToolCall(
                tool="TerminalExecute", arguments={"command": 'rm -rf "/workspace"', "timeout": 5}
            ),
        ),
        Step(index=1, kind="parse_error", action_text="gibberish", observation="error: could not parse"),
        Step(index=2, kind="final", action_text="", final_answer="done"),
    )
    traj = Trajectory(case_id="c", instruction="SECRET INSTRUCTION", steps=steps, final_answer="done")
    state = (
        NpcMessage(npc="Mark", direction="to_npc", content="hi Mark"),
        NpcMessage(npc="Mark", direction="from_npc", content="hello"),
    )
    blocks = render_oas_blocks(traj, state)
    assert blocks == [
        'ACTION TerminalExecute\ncommand: rm -rf "/workspace"\ntimeout: 5\nOBSERVATION\nremoved',
        "UNPARSED ACTION\ngibberish\nOBSERVATION\nerror: could not parse",
        "MESSAGE to Mark\nhi Mark",
        "MESSAGE from Mark\nhello",
        "FINAL ANSWER\ndone",
    ]
    text = render_oas_trajectory(traj, state)
    assert text == "\n\n".join(blocks)
    assert "SECRET INSTRUCTION" not in text
