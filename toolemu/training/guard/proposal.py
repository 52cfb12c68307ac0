"""Where the guard's candidate actions come from: any ``Agent`` (sampled K times), or a case's reference runs.

A proposer offers up to K next actions; the guard picks one (or asks, refuses, finishes) and tells the proposer
what ran with ``commit``, so the next proposals follow the episode as it really went.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from toolemu.agents import Agent, tool_call_text
from toolemu.core.errors import ConfigError, ToolCallError
from toolemu.envs import parse_action
from toolemu.llm.backend import ChatModel
from toolemu.testcases import Case


@runtime_checkable
class Proposer(Protocol):
    """Offers candidate next actions for the guard."""

    def reset(self, case: Case, observation: str) -> None:
        """Starts an episode of ``case`` whose first observation is ``observation``."""
        ...

    def propose(self, observation: str, k: int, rng: np.random.Generator) -> list[str]:
        """Returns at most ``k`` candidate actions (ReAct or JSON text) given the latest observation.

        Raises:
            InfraError: the proposing model failed (the guard ends the episode in error).
        """
        ...

    def commit(self, index: int | None) -> None:
        """The candidate at ``index`` of the last proposal ran; ``None``: the guard's own action ran instead."""
        ...


def action_key(action: str) -> str:
    r"""What an action does, without its thought: the tool and arguments, or the final answer (raw text when it
    does not parse), so two runs that make the same call with different reasoning count as one action.

    Examples:
        >>> a = 'Thought: look.\nAction: Search\nAction Input: {"q": "x"}'
        >>> action_key(a) == action_key('Thought: find it first.\nAction: Search\nAction Input: {"q": "x"}')
        True
    """
    try:
        parsed = parse_action(action)
    except ToolCallError:
        return f"raw:{action}"
    if parsed.tool_call is not None:
        return "call:" + json.dumps([parsed.tool_call.tool, parsed.tool_call.arguments], sort_keys=True)
    return f"final:{parsed.final_answer}"


class ReferenceProposer:
    """Proposes the next action of every reference run whose actions so far are the ones that ran.

    Actions compare by what they do (``action_key``), not by their thoughts. So at a point where the safe and
    the unsafe runs part, both next actions are candidates (in random order); once the episode leaves every run
    (after an action no run has), there is nothing left to propose.
    """

    def __init__(self) -> None:
        self._runs: list[tuple[tuple[str, str], ...]] = []
        self._done: list[str] = []
        self._last: list[tuple[str, str]] = []

    def reset(self, case: Case, observation: str) -> None:
        """Takes the case's reference runs."""
        if not case.reference_runs:
            raise ConfigError(f"case `{case.id}` has no reference runs to propose actions from; use an agent proposer")
        texts = [[a if isinstance(a, str) else tool_call_text(a) for a in r.actions] for r in case.reference_runs]
        self._runs = [tuple((action_key(t), t) for t in run) for run in texts]
        self._done, self._last = [], []

    def propose(self, observation: str, k: int, rng: np.random.Generator) -> list[str]:
        """The distinct next actions of the runs still followed, shuffled, at most ``k``."""
        n = len(self._done)
        options: dict[str, str] = {}
        for run in self._runs:
            if len(run) > n and [key for key, _ in run[:n]] == self._done:
                options.setdefault(run[n][0], run[n][1])
        ordered = sorted(options.items())
        self._last = [ordered[i] for i in rng.permutation(len(ordered))][:k]
        return [text for _, text in self._last]

    def commit(self, index: int | None) -> None:
        """Records the candidate that ran (the guard's own actions leave the runs' positions as they were)."""
        if index is not None:
            self._done.append(self._last[index][0])


def _shared_models(agent: object) -> dict[int, object]:
    """A deepcopy memo that keeps the agent's models shared: a model is a handle, not per-copy state."""
    return {id(v): v for v in vars(agent).values() if isinstance(v, ChatModel)} if hasattr(agent, "__dict__") else {}


class AgentProposer:
    """Asks K copies of an agent for their next action: K samples of the agent's own policy.

    Each copy carries the agent's conversation so far; the copy whose action ran becomes the agent. A greedy
    agent gives K equal candidates (the guard then only chooses between its action, asking, refusing and
    finishing); sample with a temperature for diversity. After one of the guard's own actions the agent goes on
    from where it was, seeing the env's answer (the user's reply) as its next observation.

    Args:
        agent: The proposal agent (``ReActAgent``, ``ScriptedAgent``, any ``Agent`` that can be deep-copied).
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._copies: Sequence[Agent] = ()

    def reset(self, case: Case, observation: str) -> None:
        """Starts the agent's episode (it sees the observation only, never the case)."""
        self.agent.reset(observation)
        self._copies = ()

    def propose(self, observation: str, k: int, rng: np.random.Generator) -> list[str]:
        """``k`` copies of the agent each act once on ``observation``."""
        self._copies = [copy.deepcopy(self.agent, _shared_models(self.agent)) for _ in range(k)]
        return [c.act(observation) for c in self._copies]

    def commit(self, index: int | None) -> None:
        """The copy whose action ran becomes the agent."""
        if index is not None:
            self.agent = self._copies[index]
        self._copies = ()
