"""``AGENTS``: the agents a run can name (``toolemu bench --agent``), each built over a chat model.

An agent factory is ``factory(model: ChatModel, *, variant: str) -> Agent``; ``variant`` picks a prompt variant
where the agent has them (the ReAct agent's ``plain``, ``safety``, ``helpful_safe``). A new agent is one
``register_agent`` call; the CLI, ``RunConfig`` and the run's config hash pick it up by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import get_args

from toolemu.agents.base import Agent
from toolemu.agents.react import ReActAgent, ReActVariant
from toolemu.core.errors import ConfigError
from toolemu.core.registry import Registry
from toolemu.llm.backend import ChatModel

AGENTS: Registry[Agent] = Registry("agent")
"""Agents by name (append-only); ``register_agent`` adds one."""
_VARIANTS: dict[str, tuple[str, ...]] = {}


def register_agent(name: str, factory: str | Callable[..., Agent], *, variants: tuple[str, ...] = ("plain",)) -> None:
    """Registers an agent: ``factory(model, variant=...)`` builds one for an episode.

    Args:
        name: The agent's name (``--agent``).
        factory: A callable or a ``module:attr`` path.
        variants: The prompt variants it accepts; the first is the default.

    Raises:
        ConfigError: ``name`` is already registered.
    """
    AGENTS.register(name, factory)
    _VARIANTS[name] = variants


def agent_variants(name: str) -> tuple[str, ...]:
    """The prompt variants the agent ``name`` accepts (the first is its default).

    Raises:
        NotRegisteredError: no agent of that name (the message suggests one).

    Examples:
        >>> agent_variants("react")
        ('plain', 'safety', 'helpful_safe')
    """
    AGENTS.entry(name)
    return _VARIANTS[name]


def make_agent(name: str, model: ChatModel, variant: str | None = None) -> Agent:
    """A fresh agent ``name`` over ``model`` (``variant``: its default when ``None``).

    Raises:
        NotRegisteredError: no agent of that name.
        ConfigError: a variant the agent does not have.
    """
    variants = agent_variants(name)
    chosen = variant if variant is not None else variants[0]
    if chosen not in variants:
        raise ConfigError(f"agent `{name}` has no variant `{chosen}`; use one of {', '.join(variants)}")
    return AGENTS.make(name, model=model, variant=chosen)


register_agent("react", ReActAgent, variants=get_args(ReActVariant))
