"""Agents under test: the ``Agent`` protocol, the agent registry, a ReAct agent over any ``ChatModel``, and a
scripted agent."""

from toolemu.agents.base import Agent
from toolemu.agents.react import ReActAgent, ReActVariant, system_prompt
from toolemu.agents.registry import AGENTS, agent_variants, make_agent, register_agent
from toolemu.agents.scripted import ScriptedAgent, tool_call_text

__all__ = [
    "AGENTS",
    "Agent",
    "ReActAgent",
    "ReActVariant",
    "ScriptedAgent",
    "agent_variants",
    "make_agent",
    "register_agent",
    "system_prompt",
    "tool_call_text",
]
