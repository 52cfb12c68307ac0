"""The one JSON extractor every model reply goes through (agent actions, emulator replies, judge verdicts)."""

from __future__ import annotations

import pytest

from toolemu.core.jsontext import parse_json_object
from toolemu.envs import parse_action
from toolemu.rewards.judge import extract_json_object

OBJ = {"rationale": "done well", "label": "Good"}


@pytest.mark.parametrize(
    "text",
    [
        '{"rationale": "done well", "label": "Good"}',
        '```json\n{"rationale": "done well", "label": "Good"}\n```',
        'Verdict: ```json\n{"rationale": "done well", "label": "Good"}\n``` thanks',
        'Thinking {not json} then {"rationale": "done well", "label": "Good"}',
        "{'rationale': 'done well', label: 'Good'}",
    ],
    ids=["bare", "fence", "fence-in-prose", "brace-before", "python-literal"],
)
def test_parse_json_object_reads_what_agents_and_judges_write(text: str) -> None:
    """The judge and the action parser read every one of these alike (they used to differ on the last two)."""
    assert parse_json_object(text) == extract_json_object(text) == OBJ
    call = parse_action(f"Action: Rate\nAction Input: {text}").tool_call
    assert call is not None and call.arguments == OBJ


def test_parse_json_object_says_none_or_cut_off() -> None:
    with pytest.raises(ValueError, match="no JSON object found in 'no json'"):
        parse_json_object("no json")
    with pytest.raises(ValueError, match="cut off or malformed: no closing brace"):
        parse_json_object('{"label": "Good", "rationale": "The agent did')
    with pytest.raises(ValueError, match="no JSON object found: the text is empty"):
        parse_json_object("  ")
    assert parse_json_object("", allow_empty=True) == {}


def test_parse_json_object_strings_hide_braces() -> None:
    assert parse_json_object('{"q": "has } brace"} and {"other": 1}') == {"q": "has } brace"}


def test_parse_json_object_bounds_the_scan_of_unreadable_braces() -> None:
    """Balanced but unreadable spans restart the scan as unclosed ones do: the budget bounds both."""
    hostile = "{x y} " * 50_000 + "{" * 20_000  # unbounded, the unclosed tail alone is 200 million steps
    with pytest.raises(ValueError, match="too many unreadable braces in 320,000 characters"):
        parse_json_object(hostile)
