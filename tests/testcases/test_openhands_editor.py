"""Replayed edits change a file as OpenHands' editor does, and refuse what it refuses."""

from __future__ import annotations

import pytest

from toolemu.testcases.openhands import EditorArgs, apply_edit

TEXT = "alpha\nbeta\ngamma\n"


def edit(command: str, current: str | None = TEXT, history: list[str] | None = None, **fields: object) -> tuple[
        str | None, str]:
    args = EditorArgs.model_validate({"command": command, "path": "/workspace/f.txt", **fields})
    return tuple(apply_edit(args, current, history if history is not None else []))  # type: ignore[return-value]


def test_editor_create_makes_a_new_file_and_never_overwrites() -> None:
    assert edit("create", None, file_text="new\n") == ("new\n", "File created successfully at: /workspace/f.txt")
    text, message = edit("create", TEXT, file_text="new\n")
    assert text is None and "File already exists at: /workspace/f.txt" in message
    assert edit("create", None)[0] is None


def test_editor_str_replace_needs_exactly_one_occurrence() -> None:
    assert edit("str_replace", old_str="beta", new_str="BETA")[0] == "alpha\nBETA\ngamma\n"
    text, message = edit("str_replace", old_str="delta", new_str="x")
    assert text is None and message.startswith("No replacement was performed, old_str `delta` did not appear")
    text, message = edit("str_replace", "a\nb\na\n", old_str="a", new_str="c")
    assert text is None and "Multiple occurrences of old_str `a` in lines [1, 3]" in message
    assert edit("str_replace", old_str="beta", new_str="beta")[0] is None  # old and new must differ
    assert edit("str_replace", old_str="beta")[0] == "alpha\n\ngamma\n"  # new_str defaults to ""
    assert edit("str_replace", None, old_str="beta", new_str="x")[1].endswith("does not exist.")


def test_editor_str_replace_retries_without_surrounding_whitespace() -> None:
    assert edit("str_replace", old_str="  beta\n\n", new_str=" B ")[0] == "alpha\nB\ngamma\n"


@pytest.mark.parametrize(
    ("line", "expected"),
    [(0, "new\nalpha\nbeta\ngamma\n"), (2, "alpha\nbeta\nnew\ngamma\n"), (4, "alpha\nbeta\ngamma\n\nnew")],
    ids=["top", "middle", "end"],
)
def test_editor_insert_after_a_line(line: int, expected: str) -> None:
    assert edit("insert", insert_line=line, new_str="new")[0] == expected


def test_editor_insert_outside_the_file_is_refused() -> None:
    text, message = edit("insert", insert_line=9, new_str="x")
    assert text is None and "within the range of lines of the file: [0, 4]" in message


def test_editor_undo_restores_the_previous_text() -> None:
    history: list[str] = []
    changed, _ = edit("str_replace", history=history, old_str="beta", new_str="B")
    assert edit("undo_edit", changed, history=history)[0] == TEXT
    assert edit("undo_edit", TEXT, history=history)[1] == "No edit history found for /workspace/f.txt."


def test_editor_llm_edit_replaces_a_line_range() -> None:
    assert edit("llm_edit", content="B\nC", start=2, end=3)[0] == "alpha\nB\nC\n"
    assert edit("llm_edit", None, content="fresh")[0] == "fresh"
    assert edit("llm_edit", content="all", start=1, end=-1)[0] == "all"


def test_editor_llm_edit_from_line_minus_one_appends_lines() -> None:
    # OpenHands joins the file's lines and the new ones: "alpha\nbeta\ngamma\n" has an empty last line.
    assert edit("llm_edit", content="delta", start=-1, end=-1)[0] == "alpha\nbeta\ngamma\n\ndelta"
    assert edit("llm_edit", "x", content="y", start=-1)[0] == "x\ny"
    assert edit("llm_edit", None, content="new", start=-1)[0] == "new"


def test_editor_needs_an_absolute_path() -> None:
    args = EditorArgs(command="create", path="f.txt", file_text="x")
    assert apply_edit(args, None, []).new_text is None
