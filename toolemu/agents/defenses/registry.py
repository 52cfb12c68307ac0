"""``DEFENSES``: the defenses a run can name (``toolemu bench --defense``), and how a run builds them.

A defense factory is ``factory(setup: DefenseSetup) -> Callable[[], Defense]``: it is called once per run, so it
loads what it needs then (and fails loudly there: a guard policy that cannot be loaded, a model a defense needs
but was not given), and the callable it returns makes a fresh ``Defense`` per episode. A new defense is one
``register_defense`` call; the guard (``toolemu.training.guard``) registers itself on ``import toolemu``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from toolemu.agents.base import Agent
from toolemu.agents.defenses.base import DefendedAgent, Defense
from toolemu.agents.defenses.detector import Detector
from toolemu.agents.defenses.marking import RepeatInstruction, Spotlight
from toolemu.agents.defenses.tool_filter import ToolFilter
from toolemu.core.errors import ConfigError
from toolemu.core.registry import Registry
from toolemu.llm.backend import ChatModel

NO_DEFENSE = "none"
"""The name that means "no defense" where a list of defenses is crossed (``--defense none,spotlight``)."""


@dataclass(frozen=True, slots=True)
class DefenseSetup:
    """What a run gives its defense."""

    model: ChatModel | None = None
    """The defense model (the tool filter's chooser, the detector); defenses that need none ignore it."""
    policy: Path | None = None
    """A trained policy file the defense loads (the guard's ``.zip``)."""
    max_steps: int | None = None
    """The run's step budget override (the guard's progress feature), when set."""


DefenseMaker = Callable[[], Defense]
"""Makes a fresh defense for one episode."""
DefenseFactory = Callable[[DefenseSetup], DefenseMaker]

DEFENSES: Registry[DefenseMaker] = Registry("defense")
"""Defenses by name (append-only); ``register_defense`` adds one."""
_NEEDS_MODEL: dict[str, bool] = {}


def register_defense(name: str, factory: str | DefenseFactory, *, needs_model: bool = False) -> None:
    """Registers a defense.

    Args:
        name: The defense's name (``--defense``); ``none`` is reserved.
        factory: ``factory(setup) -> () -> Defense``, or its ``module:attr`` path.
        needs_model: Whether it calls the defense model (a run then resolves one).

    Raises:
        ConfigError: ``name`` is already registered or is ``none``.
    """
    if name == NO_DEFENSE:
        raise ConfigError(f"defense name `{NO_DEFENSE}` is reserved for no defense; choose another")
    DEFENSES.register(name, factory)
    _NEEDS_MODEL[name] = needs_model


def defense_needs_model(name: str) -> bool:
    """Whether the defense ``name`` calls a model.

    Raises:
        NotRegisteredError: no defense of that name (the message suggests one).
    """
    DEFENSES.entry(name)
    return _NEEDS_MODEL[name]


def prepare_defense(name: str, setup: DefenseSetup) -> DefenseMaker:
    """Builds the defense ``name`` for a run and returns what makes one per episode.

    Raises:
        NotRegisteredError: no defense of that name.
        ConfigError: the defense needs a model and ``setup`` has none, or cannot load what it needs.
    """
    if defense_needs_model(name) and setup.model is None:
        raise ConfigError(f"defense `{name}` needs a defense model; give one (--defense-model SPEC)")
    return DEFENSES.make(name, setup=setup)


def defend(agent: Agent, defense: Defense) -> DefendedAgent:
    """``agent`` with ``defense`` between it and the env."""
    return DefendedAgent(agent, defense)


def _needs(setup: DefenseSetup, name: str) -> ChatModel:
    if setup.model is None:
        raise ConfigError(f"defense `{name}` needs a defense model; give one (--defense-model SPEC)")
    return setup.model


def _spotlight(setup: DefenseSetup) -> DefenseMaker:
    return Spotlight


def _repeat_instruction(setup: DefenseSetup) -> DefenseMaker:
    return RepeatInstruction


def _tool_filter(setup: DefenseSetup) -> DefenseMaker:
    model = _needs(setup, "tool_filter")
    return lambda: ToolFilter(model)


def _detector(setup: DefenseSetup) -> DefenseMaker:
    model = _needs(setup, "detector")
    return lambda: Detector(model)


register_defense("spotlight", _spotlight)
register_defense("repeat_instruction", _repeat_instruction)
register_defense("tool_filter", _tool_filter, needs_model=True)
register_defense("detector", _detector, needs_model=True)
