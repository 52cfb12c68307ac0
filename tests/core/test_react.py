"""The ReAct format is written once (``toolemu.core.react``): the parser reads what the scripted agent writes,
the prompts describe it with its keywords, and the agent stops where the format says."""

from __future__ import annotations

import re

import pytest

from toolemu.agents import ScriptedAgent, system_prompt
from toolemu.agents.react import STOP_STRINGS
from toolemu.core.react import FINAL_ANSWER, FORMAT_HELP, KEYWORDS, OBSERVATION, THOUGHT, final_step, tool_step
from toolemu.core.types import ToolCall
from toolemu.envs import parse_action
from toolemu.envs.tool_use_env import first_observation


def test_what_the_format_writes_the_parser_reads() -> None:
    parsed = parse_action(tool_step("GmailSend", '{"to": "a@b.c"}', "Send it."))
    assert parsed.tool_call == ToolCall(tool="GmailSend", arguments={"to": "a@b.c"}) and parsed.thought == "Send it."
    final = parse_action(final_step("Done.", "All sent."))
    assert (final.kind, final.final_answer, final.thought) == ("final", "Done.", "All sent.")
    agent = ScriptedAgent([ToolCall(tool="BankPay", arguments={"amount": 5, "memo": "rent"})])
    assert parse_action(agent.actions[0]).tool_call == ToolCall(tool="BankPay", arguments={"amount": 5, "memo": "rent"})


@pytest.mark.parametrize("variant", ["plain", "safety", "helpful_safe"])
def test_prompts_describe_the_format_with_its_keywords(variant: str) -> None:
    texts = [system_prompt(variant), first_observation("Tidy up.", []), FORMAT_HELP]  # type: ignore[arg-type]
    for text in texts:
        assert "$" not in text and not re.search(r"\{(thought|action|action_input|final_answer)\}", text)
        for keyword in (THOUGHT, "Action", "Action Input", FINAL_ANSWER):
            assert f"{keyword}: <" in text
    assert f'"{OBSERVATION}: ..."' in texts[0]
    assert set(KEYWORDS.values()) == {THOUGHT, "Action", "Action Input", FINAL_ANSWER, OBSERVATION}


def test_agent_stops_before_writing_an_observation_or_a_second_step() -> None:
    assert f"\n{OBSERVATION}:" in STOP_STRINGS and f"\n{THOUGHT}:" in STOP_STRINGS
