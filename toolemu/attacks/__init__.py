"""Attacks as data: an attack file names a goal (a harmful act with its own rule checks), a vector (the channel
its text is planted in) and a style (how the text is worded); applied to any case it fits, it makes an attacked
case whose goal is scored apart (the ``attack_goal`` scorer).

It sits beside ``toolemu.envs`` and ``toolemu.agents``: it reads cases and toolkit specs; the env plants the
text of the tool-result, NPC and tool-description vectors (``toolemu.envs.injection``).
"""

from toolemu.attacks.apply import CaseSurface, Crossing, apply_attack, case_surface, cross_attacks, why_not
from toolemu.attacks.loader import NO_ATTACK, builtin_attacks, load_attack, load_attacks
from toolemu.attacks.template import render_text
from toolemu.testcases.attack_types import (
    ATTACK_STYLES,
    VECTOR_KINDS,
    AppliedAttack,
    AttackGoal,
    AttackSpec,
    AttackStyle,
    AttackVector,
    VectorKind,
)

__all__ = [
    "ATTACK_STYLES",
    "NO_ATTACK",
    "VECTOR_KINDS",
    "AppliedAttack",
    "AttackGoal",
    "AttackSpec",
    "AttackStyle",
    "AttackVector",
    "CaseSurface",
    "Crossing",
    "VectorKind",
    "apply_attack",
    "builtin_attacks",
    "case_surface",
    "cross_attacks",
    "load_attack",
    "load_attacks",
    "render_text",
    "why_not",
]
