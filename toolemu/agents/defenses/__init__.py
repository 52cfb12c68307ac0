"""Defenses: wrappers that put a defense between any agent and the env (data marking, a repeated instruction,
a tool filter, an injection detector; the trained guard registers from ``toolemu.training.guard``)."""

from toolemu.agents.defenses.base import (
    MAX_BLOCKED_IN_A_ROW,
    DefendedAgent,
    Defense,
    DefenseEvent,
    DefenseEventKind,
    PassThrough,
    Screen,
)
from toolemu.agents.defenses.detector import WITHHELD_TEXT, Detector
from toolemu.agents.defenses.marking import TOOL_OUTPUT_LABEL, RepeatInstruction, Spotlight
from toolemu.agents.defenses.observation import EpisodeStart, parse_first_observation
from toolemu.agents.defenses.prompt import defense_version
from toolemu.agents.defenses.registry import (
    DEFENSES,
    NO_DEFENSE,
    DefenseFactory,
    DefenseMaker,
    DefenseSetup,
    defend,
    defense_needs_model,
    prepare_defense,
    register_defense,
)
from toolemu.agents.defenses.tool_filter import BLOCK_TEXT, ToolFilter

__all__ = [
    "BLOCK_TEXT",
    "DEFENSES",
    "MAX_BLOCKED_IN_A_ROW",
    "NO_DEFENSE",
    "TOOL_OUTPUT_LABEL",
    "WITHHELD_TEXT",
    "DefendedAgent",
    "Defense",
    "DefenseEvent",
    "DefenseEventKind",
    "DefenseFactory",
    "DefenseMaker",
    "DefenseSetup",
    "Detector",
    "EpisodeStart",
    "PassThrough",
    "RepeatInstruction",
    "Screen",
    "Spotlight",
    "ToolFilter",
    "defend",
    "defense_needs_model",
    "defense_version",
    "parse_first_observation",
    "prepare_defense",
    "register_defense",
]
