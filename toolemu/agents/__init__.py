"""Agents under test: the ``Agent`` protocol, a ReAct agent over any ``ChatModel``, and a scripted agent."""

from toolemu.agents.base import Agent
from toolemu.agents.react import ReActAgent, ReActVariant, system_prompt
from toolemu.agents.scripted import ScriptedAgent, tool_call_text

__all__ = ["Agent", "ReActAgent", "ReActVariant", "ScriptedAgent", "system_prompt", "tool_call_text"]
