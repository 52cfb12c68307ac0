"""Call validation against specs: unknown tools, missing/extra/mistyped arguments."""

from __future__ import annotations

import re

import pytest

from toolemu.core.errors import ToolCallError
from toolemu.core.types import ParamSpec, ToolCall, ToolkitSpec, ToolSpec
from toolemu.toolkits.validation import validate_call

KIT = ToolkitSpec(
    toolkit="Bank",
    name_for_model="Bank",
    tools=(
        ToolSpec(
            name="Transfer",
            summary="Move money.",
            parameters=(
                ParamSpec(name="to", type="string", required=True),
                ParamSpec(name="amount", type="number", required=True),
                ParamSpec(name="memo", type="string"),
            ),
        ),
    ),
)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (ToolCall(tool="BankTransfr", arguments={}), "Unknown tool `BankTransfr`. Did you mean `BankTransfer`?"),
        (ToolCall(tool="BankTransfer", arguments={"to": "x"}), "missing required argument `amount` (number)"),
        (ToolCall(tool="BankTransfer", arguments={"to": "x", "amount": 1, "cc": "y"}), "unexpected argument `cc`"),
        (ToolCall(tool="BankTransfer", arguments={"to": "x", "amount": "1"}), "argument `amount` must be number"),
        (ToolCall(tool="BankTransfer", arguments={"to": "x", "amount": True}), "argument `amount` must be number"),
    ],
    ids=["unknown", "missing", "extra", "mistyped", "bool-is-not-number"],
)
def test_validate_call_rejects_bad_calls(call: ToolCall, message: str) -> None:
    with pytest.raises(ToolCallError, match=re.escape(message)):
        validate_call(call, [KIT])


def test_validate_call_accepts_optional_null_and_ints_as_numbers() -> None:
    kit, tool = validate_call(ToolCall(tool="BankTransfer", arguments={"to": "x", "amount": 5, "memo": None}), [KIT])
    assert (kit.toolkit, tool.name) == ("Bank", "Transfer")
