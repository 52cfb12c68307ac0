"""``RayOptions``: how ``run_suite`` plays episodes as Ray tasks (``bench --executor ray``), and ``SuiteSetup``,
the recipe each worker builds its models and env config from."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from toolemu.bench.rollout import AgentFactory
from toolemu.envs import EnvConfig

FORWARDED_ENV = ("TOOLEMU_BASE_URL", "OPENAI_BASE_URL", "TOOLEMU_API_KEY", "OPENAI_API_KEY", "TOOLEMU_MODEL")
"""Environment variables that choose models, passed to the workers (a remote node does not have the driver's)."""


@runtime_checkable
class SuiteSetup(Hashable, Protocol):
    """A picklable, hashable recipe for what episodes need: called on each worker, which builds its own models.

    Live models hold connection pools and loaded weights, which cannot travel to another process; the recipe
    names them instead (model specs and options). A worker calls it once and reuses the result for every
    episode it plays.
    """

    def __call__(self) -> tuple[AgentFactory, EnvConfig]:
        """Returns a factory of fresh agents and the env config, with models resolved in this process."""
        ...


@dataclass(frozen=True, slots=True)
class RayOptions:
    """Where and how episodes run on Ray."""

    setup: SuiteSetup
    """What each worker builds its models and env config from."""
    address: str | None = None
    """A running cluster (``ray://head:10001``, ``auto``, ``head:6379``); ``None``: ``RAY_ADDRESS`` if set, else
    a Ray instance started on this machine for the run (and stopped after it)."""
    cpus_per_episode: float = 1.0
    """CPUs Ray reserves for each episode task; below 1 packs several model-bound episodes onto one CPU."""
    max_task_retries: int = 3
    """Times a task is run again when its worker dies mid-episode (node lost, process killed); its record is
    written once, from the attempt that finished."""
