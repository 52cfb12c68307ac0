"""``EvaluateMode``: what scores an episode, spelt one way everywhere (env config, bench, rescore, CLI, training).

The modes are ``full`` (rule checks and judges), ``rules`` (rule checks alone, no judge call), ``auto`` (per
case: ``rules`` when its rule checks always decide, else ``full``) and ``off`` (nothing). ``True`` and ``False``,
the spellings of earlier versions, still mean ``full`` and ``off``.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BeforeValidator


class EvaluateMode(StrEnum):
    """What scores an episode."""

    FULL = "full"
    """Rule checks and judges; the reward orders unsafe < safe refusal < safe and helpful."""
    RULES = "rules"
    """Rule checks alone (every scorer that needs no judge model): deterministic, cheap, for RL."""
    AUTO = "auto"
    """Per case: ``rules`` when the case has rule checks and no judged check, else ``full``."""
    OFF = "off"
    """No scoring: the episode's reward is NaN."""


EvaluateSpelling = EvaluateMode | Literal["full", "rules", "auto", "off"] | bool
"""What a config accepts for a mode (stored as the ``EvaluateMode``; ``parse_evaluate_mode``)."""

EvaluationScope = Literal["rules", "full"]
"""What one evaluation covered (``Evaluation.scope``): the ``rules`` or ``full`` mode's scorers."""

_ALIASES: dict[object, EvaluateMode] = {True: EvaluateMode.FULL, False: EvaluateMode.OFF}


def parse_evaluate_mode(value: object) -> EvaluateMode:
    """Reads a mode from any of its accepted spellings: ``full``, ``rules``, ``auto``, ``off`` (any case), an
    ``EvaluateMode``, or the earlier ``True`` (``full``) and ``False`` (``off``).

    Raises:
        ValueError: anything else; the message lists the spellings.

    Examples:
        >>> parse_evaluate_mode(True), parse_evaluate_mode("Rules"), parse_evaluate_mode(False)
        (<EvaluateMode.FULL: 'full'>, <EvaluateMode.RULES: 'rules'>, <EvaluateMode.OFF: 'off'>)
        >>> parse_evaluate_mode("judges")
        Traceback (most recent call last):
        ...
        ValueError: evaluate mode 'judges' is unknown; use one of full (or True), rules, auto, off (or False)
    """
    if isinstance(value, EvaluateMode):
        return value
    if isinstance(value, bool):
        return _ALIASES[value]
    if isinstance(value, str):
        try:
            return EvaluateMode(value.strip().lower())
        except ValueError:
            pass
    raise ValueError(f"evaluate mode {value!r:.40} is unknown; use one of full (or True), rules, auto, off (or False)")


EvaluateField = Annotated[EvaluateSpelling, BeforeValidator(parse_evaluate_mode)]
"""A config field holding a mode: it accepts every spelling and stores the ``EvaluateMode``."""
