"""``GuardEnv``: a ToolEmu env as a fixed-size problem for SB3, a guard choosing among proposed actions.

Observation: a ``Box`` of embeddings, ``[context | candidate 0 | ... | candidate K-1 | slot mask | progress]``,
where the context is the instruction and the last few steps. Action: ``Discrete(K + 3)``: run candidate ``i``
(``0 <= i < K``), ask the user to confirm (``K``), refuse (``K + 1``), or finish with a report of what was done
(``K + 2``). Slots beyond the candidates proposed are masked (``action_masks()``, for sb3-contrib's
``MaskablePPO``); plain PPO can still choose one, and then the guard refuses and is charged
``GuardConfig.masked_penalty`` on top, so a masked slot is never better than refusing outright.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Literal, SupportsFloat

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from pydantic import Field

from toolemu.bench import ToolEmuSuiteEnv
from toolemu.core.errors import ConfigError, InfraError, ToolCallError
from toolemu.core.trajectory import ErrorRecord
from toolemu.core.types import Frozen
from toolemu.envs import INFO_ERROR, ToolEmuEnv, parse_action
from toolemu.training.guard.embedding import Embedder, HashingEmbedder
from toolemu.training.guard.proposal import Proposer, ReferenceProposer

GuardChoice = Literal["candidate", "ask", "refuse", "finish", "masked"]
"""What a guard action did; ``masked`` is a masked slot, run as a refusal and penalised."""

INFO_CANDIDATES = "guard_candidates"
"""``info`` key: the candidate actions offered at this step (list of str)."""
INFO_ACTION_MASK = "action_mask"
"""``info`` key: which of the ``K + 3`` actions are valid now (bool array)."""
INFO_CHOICE = "guard_choice"
"""``info`` key: what the last guard action did (a ``GuardChoice``)."""

ASK_TEXT = ("Thought: The next step could have consequences the user did not ask for; I need their go-ahead.\n"
            "Final Answer: Before I go on, please confirm. I would next: {plan}. Shall I?")
REFUSE_TEXT = ("Thought: The next step could cause harm I cannot rule out.\n"
               "Final Answer: I won't go on with this: the next step could cause harm I cannot rule out. Please "
               "do it yourself, or tell me more about what is safe.")
FINISH_TEXT = "Thought: I will stop here.\nFinal Answer: I have stopped here. Done so far: {done}."


class GuardConfig(Frozen):
    """Shape and rules of a ``GuardEnv``."""

    k: int = Field(default=4, ge=1, le=32)
    """Candidate slots (the proposer offers at most this many)."""
    history_steps: int = Field(default=4, ge=0)
    """Recent steps (action and observation) embedded in the context with the instruction."""
    masked_penalty: float = Field(default=0.1, ge=0.0)
    """Subtracted when a masked slot is chosen (it runs as a refusal)."""
    raise_on_error: bool = True
    """An episode that ends in an infra error raises its ``InfraError`` (training cannot use a NaN reward, and a
    stand-in number would be a fake score); off, the step returns NaN with the error in ``info``."""


def describe_action(action: str) -> str:
    """A short description of a candidate for the confirmation question.

    Examples:
        >>> describe_action('Action: Search\\nAction Input: {"q": "x"}')
        'call Search with {"q": "x"}'
    """
    try:
        parsed = parse_action(action)
    except ToolCallError:  # an unparseable candidate still gets a description; the env will reject it
        return action.strip().splitlines()[-1][:200] if action.strip() else "(empty)"
    if parsed.tool_call is None:
        return f"answer: {(parsed.final_answer or '')[:200]}"
    args = json.dumps(parsed.tool_call.arguments, ensure_ascii=False)
    return f"call {parsed.tool_call.tool} with {args[:200]}"


class GuardEnv(gym.Env[npt.NDArray[np.float32], np.int64]):
    """A guard over a ToolEmu env: each step picks one of K proposed actions, or asks, refuses or finishes.

    Args:
        env: A ``ToolEmuEnv`` or ``ToolEmuSuiteEnv`` (or either made by ``gym.make``).
        proposer: Where candidates come from; default the case's reference runs.
        embedder: Text embedder; default ``HashingEmbedder()``.
        config: Shape and rules.

    The reward is the wrapped env's (the terminal evaluation), minus ``masked_penalty`` for a masked choice.
    """

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 (Gymnasium's convention)

    def __init__(self, env: gym.Env[str, str], proposer: Proposer | None = None, embedder: Embedder | None = None,
                 config: GuardConfig | None = None) -> None:
        if not isinstance(env.unwrapped, ToolEmuEnv | ToolEmuSuiteEnv):
            raise ConfigError(f"GuardEnv wraps ToolEmu-v0 or ToolEmuSuite-v0, got {type(env.unwrapped).__name__}")
        self.env = env
        self.proposer: Proposer = proposer if proposer is not None else ReferenceProposer()
        self.embedder: Embedder = embedder if embedder is not None else HashingEmbedder()
        self.config = config or GuardConfig()
        k, dim = self.config.k, self.embedder.dim
        self.action_space = spaces.Discrete(k + 3)
        self.observation_space = spaces.Box(low=-1.0, high=1.0, shape=(dim * (k + 1) + k + 1,), dtype=np.float32)
        self._candidates: list[str] = []
        self._executed: list[str] = []
        self._done = True
        self._failed: dict[str, Any] | None = None

    # Action ids: candidates 0..K-1, then these three.
    @property
    def ask_action(self) -> int:
        """The action that asks the user to confirm."""
        return self.config.k

    @property
    def refuse_action(self) -> int:
        """The action that refuses."""
        return self.config.k + 1

    @property
    def finish_action(self) -> int:
        """The action that ends the episode with a report of what was done."""
        return self.config.k + 2

    @property
    def episode(self) -> ToolEmuEnv:
        """The ``ToolEmuEnv`` of the current episode (the suite's current case's)."""
        inner = self.env.unwrapped
        return inner.current if isinstance(inner, ToolEmuSuiteEnv) else inner  # type: ignore[return-value]

    @property
    def candidates(self) -> list[str]:
        """The candidate actions on offer now."""
        return list(self._candidates)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Valid actions now: the filled candidate slots, ask, refuse and finish (sb3-contrib's mask hook)."""
        mask = np.zeros(self.config.k + 3, dtype=bool)
        mask[: len(self._candidates)] = True
        mask[self.config.k :] = True
        return mask

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        """Resets the wrapped env (``options`` go to it: ``{"case": id}`` for a suite) and proposes."""
        super().reset(seed=seed)
        obs, info = self.env.reset(seed=seed, options=options)
        self._executed, self._done, self._failed = [], False, None
        self.proposer.reset(self.episode.case, obs)
        # A proposer failure here ends the episode in error; the next step reports it (reset cannot end one).
        self._failed = self._propose(obs)
        return self._observe(info)

    def step(self, action: int | np.integer[Any]) -> tuple[npt.NDArray[np.float32], SupportsFloat, bool, bool,
                                                            dict[str, Any]]:
        """Runs the chosen action in the wrapped env and proposes the next candidates."""
        if self._done:
            raise ConfigError("GuardEnv.step() after the episode ended; call reset()")
        if self._failed is not None:
            return self._end_in_error(self._failed)
        choice, text, index, penalty = self._resolve(int(action))
        self.proposer.commit(index)
        obs, reward, terminated, truncated, info = self.env.step(text)
        if index is not None:
            self._executed.append(text)
        if terminated or truncated:
            self._done = True
            self._candidates = []
            self._check_error(float(reward), info)
        else:
            failed = self._propose(obs)
            if failed is not None:
                return self._end_in_error(failed)
        vector, info = self._observe(info)
        info[INFO_CHOICE] = choice
        return vector, float(reward) - penalty, terminated, truncated, info

    def render(self) -> str | None:
        """The episode so far as text."""
        return self.episode.render()

    def close(self) -> None:
        """Closes the wrapped env."""
        self.env.close()
        super().close()

    # -- internals -----------------------------------------------------------------------------------------

    def _resolve(self, action: int) -> tuple[GuardChoice, str, int | None, float]:
        """(what it is, the text to send, the candidate index or None, the penalty)."""
        k = self.config.k
        if not 0 <= action < k + 3:
            raise ConfigError(f"GuardEnv action {action} is not in 0..{k + 2}")
        if action < k:
            if action < len(self._candidates):
                return "candidate", self._candidates[action], action, 0.0
            return "masked", REFUSE_TEXT, None, self.config.masked_penalty
        if action == self.ask_action:
            plan = "; or ".join(describe_action(c) for c in self._candidates) or "go ahead with your request"
            return "ask", ASK_TEXT.format(plan=plan), None, 0.0
        if action == self.refuse_action:
            return "refuse", REFUSE_TEXT, None, 0.0
        done = "; ".join(describe_action(a) for a in self._executed) or "nothing yet"
        return "finish", FINISH_TEXT.format(done=done), None, 0.0

    def _check_error(self, reward: float, info: dict[str, Any]) -> None:
        if math.isnan(reward) and self.config.raise_on_error:
            error = info.get(INFO_ERROR)
            detail = f"{error.type}: {error.message}" if isinstance(error, ErrorRecord) else "no evaluation"
            raise InfraError(f"episode of case `{self.episode.case.id}` ended without a reward ({detail}); "
                             "training stops rather than score it (GuardConfig.raise_on_error)")

    def _propose(self, obs: str) -> dict[str, Any] | None:
        """Asks for the next candidates; a proposer failure aborts the episode and returns its terminal info."""
        try:
            self._candidates = self.proposer.propose(obs, self.config.k, self.np_random)[: self.config.k]
        except InfraError as e:
            self._candidates = []
            return self.episode.abort(ErrorRecord.from_exception(e, "agent"))
        return None

    def _end_in_error(self, info: dict[str, Any]) -> tuple[npt.NDArray[np.float32], SupportsFloat, bool, bool,
                                                            dict[str, Any]]:
        self._done, self._failed = True, None
        self._check_error(math.nan, info)
        vector, info = self._observe(info)
        return vector, math.nan, False, True, info

    def _observe(self, info: dict[str, Any]) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        info = dict(info)
        info[INFO_CANDIDATES] = list(self._candidates)
        info[INFO_ACTION_MASK] = self.action_masks()
        return self._vector(), info

    def _context(self) -> str:
        env = self.episode
        steps = env.trajectory().steps[-self.config.history_steps :] if self.config.history_steps else ()
        parts = [env.case.instruction]
        for step in steps:
            parts += [step.action_text, step.observation]
        return "\n".join(parts)

    def _vector(self) -> npt.NDArray[np.float32]:
        progress = len(self.episode.trajectory().steps) / self.episode.max_steps
        return guard_vector(self.embedder, self.config.k, self._context(), self._candidates, progress)


def guard_vector(embedder: Embedder, k: int, context: str, candidates: Sequence[str],
                 progress: float) -> npt.NDArray[np.float32]:
    """The guard's observation: ``[context | candidate 0 | ... | candidate K-1 | slot mask | progress]``, the
    texts embedded, empty slots as zero rows, ``progress`` (steps taken / step budget) capped at 1."""
    texts = [context, *candidates, *([""] * (k - len(candidates)))]
    embedded = embedder.embed(texts).reshape(-1)
    slots = np.zeros(k, dtype=np.float32)
    slots[: len(candidates)] = 1.0
    return np.concatenate([embedded, slots, np.array([min(1.0, progress)], dtype=np.float32)]).astype(np.float32)
