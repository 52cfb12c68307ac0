"""Action parsing: ReAct and JSON forms, leniency, and agent-facing errors."""

from __future__ import annotations

import pytest

from toolemu.core.errors import ActionParseError
from toolemu.envs.action import parse_action


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ('Thought: go\nAction: GmailSend\nAction Input: {"to": "a@b.c"}', "GmailSend", {"to": "a@b.c"}),
        ('Action: GmailSend\nAction Input: ```json\n{"to": "a@b.c"}\n```', "GmailSend", {"to": "a@b.c"}),
        ("Action: BankPay\nAction Input: {'amount': 5, 'confirm': True, 'memo': None}", "BankPay",
         {"amount": 5, "confirm": True, "memo": None}),
        ('Action: `BankPay`\nAction Input: {"amount": 5} and then I will check', "BankPay", {"amount": 5}),
        ("Action: LockStatus\nAction Input: {}", "LockStatus", {}),
        ("Action: LockStatus", "LockStatus", {}),
        ('{"tool": "GmailSend", "arguments": {"to": "x"}}', "GmailSend", {"to": "x"}),
        ('{"name": "GmailSend", "arguments": "{\\"to\\": \\"x\\"}"}', "GmailSend", {"to": "x"}),
        ('{"type": "function", "function": {"name": "GmailSend", "arguments": {"to": "x"}}}', "GmailSend", {"to": "x"}),
        ('Action: A\nAction Input: {"q": "has } brace"}\nObservation: {"fake": 1}', "A", {"q": "has } brace"}),
    ],
    ids=["react", "fenced", "python-literals", "stray-text", "empty-args", "no-input", "json", "json-str-args",
         "openai-shape", "invented-observation"],
)
def test_parse_action_tool_forms(text: str, tool: str, args: dict[str, object]) -> None:
    parsed = parse_action(text)
    assert parsed.kind == "tool"
    assert parsed.tool_call is not None
    assert parsed.tool_call.tool == tool
    assert parsed.tool_call.arguments == args


def test_parse_action_final_answer_and_thought() -> None:
    parsed = parse_action("Thought: nothing to do\nFinal Answer: I will not do that.")
    assert parsed.kind == "final"
    assert parsed.final_answer == "I will not do that."
    assert parsed.thought == "nothing to do"


def test_parse_action_json_final_answer() -> None:
    assert parse_action('{"final_answer": "done"}').final_answer == "done"


def test_parse_action_first_of_action_and_final_wins() -> None:
    parsed = parse_action('Action: A\nAction Input: {"x": 1}\nFinal Answer: done')
    assert parsed.kind == "tool" and parsed.tool_call is not None and parsed.tool_call.arguments == {"x": 1}


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ('Thought: deleted.\nAction: Final Answer: "I deleted 2 emails."', "I deleted 2 emails."),
        ("Action: Final Answer\nAction Input: I deleted 2 emails.", "I deleted 2 emails."),
        ("Action: `Final Answer`:\nI deleted 2 emails.", "I deleted 2 emails."),
    ],
    ids=["same-line", "in-action-input", "next-line"],
)
def test_parse_action_final_answer_written_as_an_action(text: str, answer: str) -> None:
    # The embedded model wrote this six times in a row; "Final" is no tool, so it can only mean the answer.
    parsed = parse_action(text)
    assert parsed.kind == "final" and parsed.final_answer == answer and parsed.tool_call is None


def test_parse_action_final_answer_action_without_answer_is_an_error() -> None:
    with pytest.raises(ActionParseError, match="`Action: Final Answer` needs the answer after it"):
        parse_action("Action: Final Answer:")


def test_parse_action_tool_named_like_final_is_still_a_tool() -> None:
    parsed = parse_action('Action: FinalAnswerArchive\nAction Input: {"id": 1}')
    assert parsed.kind == "tool" and parsed.tool_call is not None and parsed.tool_call.tool == "FinalAnswerArchive"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Your reply was empty."),
        ("I think I should send the email.", "Could not find `Action:` or `Final Answer:`"),
        ("Action: A\nAction Input: {not json", "Could not parse `Action Input` for `A`"),
        ("Action: A\nAction Input: [1, 2]", "Could not parse `Action Input` for `A`"),
        ("Action: A\nsome words", "Missing `Action Input:` after `Action: A`"),
    ],
    ids=["empty", "prose", "broken-json", "array", "missing-input"],
)
def test_parse_action_errors_teach_the_format(text: str, message: str) -> None:
    with pytest.raises(ActionParseError, match=message.replace("`", "`").replace("(", r"\(")) as info:
        parse_action(text)
    assert "Final Answer:" in str(info.value)


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("Action: A\nAction Input: {query: 'invoice', max_results: 10}", {"query": "invoice", "max_results": 10}),
        ('Action: A\nAction Input: {"q": "x", folder: "inbox", ok: true, none: null}',
         {"q": "x", "folder": "inbox", "ok": True, "none": None}),
        ("Action: A\nAction Input: {'m': 'it is true: null', flag: true}", {"m": "it is true: null", "flag": True}),
    ],
    ids=["js-object", "mixed-keys", "words-inside-strings-untouched"],
)
def test_parse_action_accepts_unquoted_keys(text: str, args: dict[str, object]) -> None:
    parsed = parse_action(text)
    assert parsed.tool_call is not None and parsed.tool_call.arguments == args
