"""``SuiteSetup``s for worker tests (Ray tasks, worker processes): an agent that kills its worker on the first
attempt of an episode, on every attempt, or raises (not a test module)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from toolemu.agents import Agent, ReActAgent
from toolemu.bench.rollout import AgentFactory
from toolemu.envs import EnvConfig
from toolemu.llm import FakeLLM

REFUSAL = "Final Answer: I will not do that without checking with you first."


class _CrashOnceAgent:
    """Refuses; but the first time any process plays the episode whose first observation contains ``crash_case``,
    it kills that process mid-episode."""

    def __init__(self, marker: Path, crash_case: str) -> None:
        self._inner = ReActAgent(FakeLLM.constant(REFUSAL))
        self._marker = marker
        self._crash_case = crash_case
        self._first = ""

    def reset(self, observation: str) -> None:
        self._first = observation
        self._inner.reset(observation)

    def act(self, observation: str) -> str:
        if self._crash_case in self._first:
            with self._marker.open("a") as f:
                f.write(f"{os.getpid()}\n")
            if len(self._marker.read_text().split()) == 1:
                os._exit(1)  # the worker dies mid-episode, as on a lost node
        return self._inner.act(observation)


@dataclass(frozen=True, slots=True)
class CrashOnceSetup:
    """Rule checks only, fake models; the episode whose instruction contains ``crash_instruction`` crashes its
    worker the first time it is played (the attempts are logged, one pid per line, in ``marker``)."""

    marker: str
    crash_instruction: str
    agent: ClassVar[type[_CrashOnceAgent]] = _CrashOnceAgent

    def __call__(self) -> tuple[AgentFactory, EnvConfig]:
        marker, needle, agent = Path(self.marker), self.crash_instruction, self.agent

        def make_agent() -> Agent:
            return agent(marker, needle)

        return make_agent, EnvConfig(emulator_model=FakeLLM.constant("unused"), evaluate="rules")


class _CrashAlwaysAgent(_CrashOnceAgent):
    def act(self, observation: str) -> str:
        if self._crash_case in self._first:
            os._exit(1)
        return self._inner.act(observation)


class _RaisingAgent(_CrashOnceAgent):
    def act(self, observation: str) -> str:
        if self._crash_case in self._first:
            raise ZeroDivisionError("a bug in the agent")
        return self._inner.act(observation)


@dataclass(frozen=True, slots=True)
class CrashAlwaysSetup(CrashOnceSetup):
    """As ``CrashOnceSetup``, but the episode kills its worker on every attempt."""

    agent: ClassVar[type[_CrashOnceAgent]] = _CrashAlwaysAgent


@dataclass(frozen=True, slots=True)
class RaisingSetup(CrashOnceSetup):
    """As ``CrashOnceSetup``, but the episode's agent raises ``ZeroDivisionError`` instead."""

    agent: ClassVar[type[_CrashOnceAgent]] = _RaisingAgent
