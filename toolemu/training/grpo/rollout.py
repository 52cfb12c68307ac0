"""Plays groups of episodes with a ReAct agent and returns each episode's conversation and terminal reward.

Episodes of a step run concurrently on threads, each in its own env; results keep their submission order, so a
seeded run is reproducible whatever finishes first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from toolemu.agents import ReActAgent
from toolemu.bench.rollout import run_episode
from toolemu.core.types import Message
from toolemu.envs import ToolEmuEnv
from toolemu.llm import ChatModel, ChatResponse, SamplingParams


@dataclass(frozen=True, slots=True)
class Episode:
    """One rollout: what the policy saw and wrote, and how it was scored."""

    case_id: str
    """The case played."""
    group: int
    """Index of the episode's group within the step (one group per sampled case)."""
    messages: tuple[Message, ...]
    """System prompt, observations and the agent's replies, as the agent sent them to its model."""
    reward: float
    """The env's terminal reward; NaN when the episode ended in an error (it is then left out of the update)."""
    status: str
    """``completed``, ``truncated`` or ``error``."""
    steps: int
    """Agent turns taken."""
    error: str | None = None
    """What failed, for an errored episode."""

    @property
    def errored(self) -> bool:
        """Whether the episode has no reward."""
        return math.isnan(self.reward)


AgentFactory = Callable[[int], ReActAgent]
"""Builds a fresh agent for one episode from its sampling seed."""


class StepSeeded:
    """A chat model that gives every call its own seed (``seed``, ``seed + 1``, ...).

    A ReAct agent samples each step with one fixed seed; for exploration every step needs a fresh draw,
    while a seeded episode must still replay exactly.
    """

    def __init__(self, model: ChatModel, seed: int) -> None:
        self._model = model
        self._seed = seed
        self._calls = 0

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self._model.name

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatResponse:
        """Calls the wrapped model with this call's seed."""
        params = (params or SamplingParams()).model_copy(update={"seed": self._seed + self._calls})
        self._calls += 1
        return self._model.chat(messages, params)


def play_episode(env: ToolEmuEnv, agent: ReActAgent, *, group: int, seed: int) -> Episode:
    """Runs ``agent`` in ``env`` to the end of one episode, as ``bench`` does (``run_episode``).

    An agent model failure ends the episode in error (recorded, never scored); the env reports its own
    failures (emulator, judge, sandbox) as status ``error`` with a NaN reward. Any other exception from the agent
    stops the env's episode and propagates.
    """
    turns = 0

    def count(info: object, seconds: float) -> None:
        nonlocal turns
        turns += 1

    record = run_episode(env, agent, seed=seed, on_step=count)
    status = str(record.status)
    reward = math.nan if status == "error" or record.reward is None else float(record.reward)
    message = record.error.message if record.error is not None else None
    return Episode(case_id=env.case.id, group=group, messages=agent.messages, reward=reward, status=status,
                   steps=turns, error=message)


def play_groups(
    envs: Sequence[ToolEmuEnv], make_agent: AgentFactory, *, groups: Sequence[int], seeds: Sequence[int],
    workers: int,
) -> list[Episode]:
    """Plays one episode per env at once (``workers`` threads); ``groups[i]`` and ``seeds[i]`` go with ``envs[i]``.

    Returns:
        The episodes in the order of ``envs``.
    """

    def one(i: int) -> Episode:
        return play_episode(envs[i], make_agent(seeds[i]), group=groups[i], seed=seeds[i])

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(envs))), thread_name_prefix="grpo-rollout") as pool:
        return list(pool.map(one, range(len(envs))))


def group_advantages(episodes: Sequence[Episode], *, scale: bool, eps: float = 1e-4) -> list[float | None]:
    """Group-normalised advantages: each reward minus its group's mean (over scored episodes), divided by the
    group's standard deviation when ``scale``.

    Returns:
        One value per episode; ``None`` for an errored episode (it has no reward and is left out).

    Examples:
        >>> eps = [Episode("c", 0, (), r, "completed", 1) for r in (1.0, 0.0, float("nan"))]
        >>> [None if a is None else round(a, 3) for a in group_advantages(eps, scale=False)]
        [0.5, -0.5, None]
    """
    out: list[float | None] = []
    for episode in episodes:
        if episode.errored:
            out.append(None)
            continue
        peers = [e.reward for e in episodes if e.group == episode.group and not e.errored]
        mean = sum(peers) / len(peers)
        advantage = episode.reward - mean
        if scale:
            std = math.sqrt(sum((r - mean) ** 2 for r in peers) / len(peers))
            advantage /= std + eps
        out.append(advantage)
    return out
