"""The OpenHands file editor's edit semantics, as pure functions over a file's text (for replaying its logs).

OpenHands' ``str_replace_editor`` (the ``oh_aci`` implementation) edits files with ``create``,
``str_replace``, ``insert`` and ``undo_edit``; its LLM-based editor replaces a line range, or appends lines
(``start`` -1). A replayed edit is computed here from the file's current text and written back through the
env's Files toolkit, so the episode's files end as OpenHands' editor would have left them, and a call its editor
refused changes nothing.
"""

from __future__ import annotations

import posixpath
import re
from typing import NamedTuple

from toolemu.testcases.openhands.format import EditorArgs


class EditOutcome(NamedTuple):
    """What one editor call did: the file's new text (``None`` when nothing is written) and the message."""

    new_text: str | None
    message: str


def _occurrences(text: str, needle: str) -> list[int]:
    """1-based line numbers where ``needle`` starts in ``text``."""
    return [text.count("\n", 0, m.start()) + 1 for m in re.finditer(re.escape(needle), text)]


def apply_edit(args: EditorArgs, current: str | None, history: list[str]) -> EditOutcome:
    """Applies one editor call to a file whose text is ``current`` (``None``: it does not exist).

    Args:
        args: The editor call (``create``, ``str_replace``, ``insert``, ``undo_edit`` or ``llm_edit``).
        current: The file's text now.
        history: Earlier texts of this file, oldest first (``undo_edit`` pops the last one); a successful
            edit appends the text it replaced.

    Returns:
        The new text to write, or ``None`` with the editor's error message when it refuses the call.
    """
    path = args.path
    if not posixpath.isabs(path):
        return EditOutcome(None, f"Invalid `path` parameter: {path}. The path should be an absolute path.")
    if args.command == "create":
        if current is not None:
            return EditOutcome(None, f"Invalid `path` parameter: {path}. File already exists at: {path}. "
                                     "Cannot overwrite files using command `create`.")
        if args.file_text is None:
            return EditOutcome(None, "Parameter `file_text` is required for command: create.")
        return _changed(args.file_text, "", history, f"File created successfully at: {path}")
    if args.command == "llm_edit":
        return _llm_edit(args, current, history)
    if current is None:
        return EditOutcome(None, f"Invalid `path` parameter: {path}. The path {path} does not exist.")
    if args.command == "str_replace":
        return _str_replace(args, current, history)
    if args.command == "insert":
        return _insert(args, current, history)
    if args.command == "undo_edit":
        if not history:
            return EditOutcome(None, f"No edit history found for {path}.")
        return EditOutcome(history.pop(), f"Last edit to {path} undone successfully.")
    return EditOutcome(None, f"Unrecognized command {args.command}.")


def _changed(new_text: str, old_text: str, history: list[str], message: str) -> EditOutcome:
    history.append(old_text)
    return EditOutcome(new_text, message)


def _str_replace(args: EditorArgs, current: str, history: list[str]) -> EditOutcome:
    old, new = args.old_str, args.new_str or ""
    if old is None:
        return EditOutcome(None, "Parameter `old_str` is required for command: str_replace.")
    found = _occurrences(current, old)
    if not found:
        # The editor retries without surrounding whitespace before giving up.
        old, new = old.strip(), new.strip()
        found = _occurrences(current, old) if old else []
    if not found:
        return EditOutcome(None, f"No replacement was performed, old_str `{old}` did not appear verbatim in "
                                 f"{args.path}.")
    if len(found) > 1:
        return EditOutcome(None, f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines "
                                 f"{found}. Please ensure it is unique.")
    if old == new:
        return EditOutcome(None, "No replacement was performed. `new_str` and `old_str` must be different.")
    return _changed(current.replace(old, new, 1), current, history, f"The file {args.path} has been edited.")


def _insert(args: EditorArgs, current: str, history: list[str]) -> EditOutcome:
    if args.new_str is None:
        return EditOutcome(None, "Parameter `new_str` is required for command: insert.")
    lines = current.split("\n")
    line = args.insert_line
    if line is None or not 0 <= line <= len(lines):
        return EditOutcome(None, f"Invalid `insert_line` parameter: {line}. It should be within the range of "
                                 f"lines of the file: [0, {len(lines)}]")
    text = "\n".join(lines[:line] + args.new_str.split("\n") + lines[line:])
    return _changed(text, current, history, f"The file {args.path} has been edited.")


def _llm_edit(args: EditorArgs, current: str | None, history: list[str]) -> EditOutcome:
    content = args.content or ""
    if current is None:
        return _changed(content, "", history, f"File created successfully at: {args.path}")
    lines = current.split("\n")
    if args.start == -1:  # appended as lines after the last one
        return _changed("\n".join(lines + content.split("\n")), current, history,
                        f"The file {args.path} has been edited.")
    start = max(args.start, 1)
    end = len(lines) if args.end == -1 else min(args.end, len(lines))
    if start > end + 1:
        return EditOutcome(None, f"Invalid range: start {args.start} is after end {args.end} in {args.path}.")
    text = "\n".join(lines[: start - 1] + content.split("\n") + lines[end:])
    return _changed(text, current, history, f"The file {args.path} has been edited.")
