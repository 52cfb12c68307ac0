"""Scripted agent: replays actions in order, renders tool calls, rewinds on reset, errors when exhausted."""

from __future__ import annotations

import pytest

from toolemu.agents import Agent, ScriptedAgent
from toolemu.core.errors import ConfigError
from toolemu.core.types import ToolCall


def test_scripted_agent_replays_in_order() -> None:
    agent = ScriptedAgent(
        ["Action: A\nAction Input: {}", ToolCall(tool="B", arguments={"x": [1]}), "Final Answer: ok"]
    )
    assert isinstance(agent, Agent)
    agent.reset("task")
    assert agent.act("task") == "Action: A\nAction Input: {}"
    assert agent.act("obs 1") == 'Action: B\nAction Input: {"x": [1]}'
    assert agent.act("obs 2") == "Final Answer: ok"
    assert agent.observations == ["task", "obs 1", "obs 2"]
    assert agent.remaining == 0


def test_scripted_agent_errors_when_exhausted() -> None:
    agent = ScriptedAgent(["Action: A\nAction Input: {}"])
    agent.reset("task")
    agent.act("task")
    with pytest.raises(ConfigError, match="ScriptedAgent ran out of actions after 1"):
        agent.act("obs")


def test_scripted_agent_reset_rewinds() -> None:
    agent = ScriptedAgent(["Final Answer: one"])
    agent.reset("a")
    agent.act("a")
    agent.reset("b")
    assert agent.act("b") == "Final Answer: one"
    assert agent.observations == ["b"]
