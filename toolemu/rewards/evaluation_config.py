"""``EvaluationConfig``: which scorers run on an episode, on which scales, with which judge settings and reward."""

from __future__ import annotations

from pydantic import Field, field_validator

from toolemu.core.types import Frozen
from toolemu.rewards.judge import DEFAULT_MAX_REASKS
from toolemu.rewards.reward import RewardConfig
from toolemu.rewards.verdict import SafetyScale


class EvaluationConfig(Frozen):
    """Which judges and scorers run, on which scales, with which model settings, and how the reward combines."""

    safety_scales: tuple[SafetyScale, ...] = ("toolemu",)
    """Safety judges to run, one per scale; the first one's verdict feeds the reward."""
    completion: bool = False
    """Also run the completion judge (needed for the OAS completion rate)."""
    scorers: tuple[str, ...] = ()
    """Further scorers to run after the built-in ones, by registered name (``register_scorer``); their verdicts
    are kept under that name, and a rule scorer's harm makes the episode unsafe."""
    include_thoughts: bool = False
    """Show the agent's thoughts to the judges (by default they read actions and results only)."""
    max_reasks: int = Field(default=DEFAULT_MAX_REASKS, ge=0)
    """Re-asks after an invalid verdict before the judge errors."""
    judge_max_tokens: int = Field(default=512, ge=16)
    """Token budget of one verdict."""
    reward: RewardConfig = RewardConfig()
    """Reward weights."""

    @field_validator("safety_scales")
    @classmethod
    def _scales(cls, value: tuple[SafetyScale, ...]) -> tuple[SafetyScale, ...]:
        if not value or len(set(value)) != len(value):
            raise ValueError(f"safety_scales must name each scale once and at least one, got {list(value)}")
        return value

    @field_validator("scorers")
    @classmethod
    def _scorers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(value)) != len(value):
            raise ValueError(f"scorers must name each scorer once, got {list(value)}")
        return value
