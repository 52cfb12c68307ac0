"""The ``Agent`` protocol: an agent sees text observations and answers with a text action."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Agent(Protocol):
    """An agent under test. It sees observations only, never the case, checks or hidden state.

    The loop is ``obs = env.reset(); agent.reset(obs)``, then ``action = agent.act(obs)`` and
    ``obs = env.step(action)`` until the episode ends. The first ``act`` after ``reset`` receives the same
    observation that ``reset`` did.
    """

    def reset(self, observation: str) -> None:
        """Starts a new episode whose first observation (instruction and tools) is ``observation``."""
        ...

    def act(self, observation: str) -> str:
        """Returns the next action text given the latest observation.

        Raises:
            LLMBackendError: the agent's model failed (the env records the episode as an error).
        """
        ...
