"""``guard`` as a defense: the trained guard policy (``toolemu train guard``) screens each action of any agent,
which is its one candidate; the guard lets it through, or asks the user, refuses or finishes in its place.

Registered on ``import toolemu`` (``register_guard_defense``): the defense registry sits on the agents' floor,
the policy's loader here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from toolemu.agents.defenses import (
    DEFENSES,
    DefenseMaker,
    DefenseSetup,
    EpisodeStart,
    PassThrough,
    Screen,
    register_defense,
)
from toolemu.core.action import ParsedAction
from toolemu.core.errors import ConfigError
from toolemu.core.types import ToolCall
from toolemu.envs.tool_use_env import DEFAULT_MAX_STEPS_EMULATED
from toolemu.training.guard.embedding import Embedder, HashingEmbedder, TransformersEmbedder
from toolemu.training.guard.env import ASK_TEXT, FINISH_TEXT, REFUSE_TEXT, describe_action, guard_vector
from toolemu.training.guard.train import SavedGuard, load_guard, sb3_policy

GUARD_DEFENSE_REVISION = 1


class GuardDefense(PassThrough):
    """The trained guard between an agent and the env.

    Before each parsed action reaches the env, the policy sees what it saw in training (``GuardEnv``): the
    embedded context (the user's request and the last ``history_steps`` actions sent with the env's raw answers),
    the agent's action in candidate slot 0 with the other slots empty and masked, and progress (actions sent /
    the run's ``--max-steps``, else 15). Its choice: slot 0 sends the action; *ask* sends ``ASK_TEXT`` (a final
    answer asking the user to confirm the action), *refuse* ``REFUSE_TEXT``, *finish* ``FINISH_TEXT`` (what was
    done so far), each in the agent's place and recorded (``guard_ask``, ``guard_refuse``, ``guard_finish``); an
    empty slot counts as a refusal, as in training. The agent sees every observation unchanged. Unparseable
    actions pass (the env answers them with its format help).

    Args:
        policy: ``GuardPolicy`` callable (``sb3_policy`` of the loaded model).
        saved: The policy's description (env shape).
        embedder: The embedder it was trained with.
        max_steps: The step budget progress is measured against.
        version: This guard's version (policy file hash included).
    """

    def __init__(self, policy: Any, saved: SavedGuard, embedder: Embedder, *, max_steps: int, version: str) -> None:
        super().__init__("guard", version)
        self.policy = policy
        self.saved = saved
        self.embedder = embedder
        self.max_steps = max_steps
        self._history: list[tuple[str, str]] = []
        self._sent: list[str] = []
        self._rng = np.random.default_rng(0)

    def start(self, start: EpisodeStart) -> str:
        """Starts the episode's history."""
        self._history, self._sent = [], []
        return super().start(start)

    def observe(self, call: ToolCall | None, observation: str, turn: int) -> str:
        """Keeps the env's answer for the context; the agent sees it unchanged."""
        if self._sent:
            self._history.append((self._sent[-1], observation))
        return observation

    def screen(self, action: str, parsed: ParsedAction | None, turn: int) -> Screen:
        """Lets the guard policy choose between the action and asking, refusing or finishing."""
        if parsed is None:
            self._sent.append(action)
            return Screen(action)
        k, h = self.saved.guard.k, self.saved.guard.history_steps
        instruction = self.episode.instruction if self.episode is not None else ""
        parts = [instruction]
        for sent, seen in self._history[-h:] if h else ():
            parts += [sent, seen]
        vector = guard_vector(self.embedder, k, "\n".join(parts), [action], turn / self.max_steps)
        mask = np.zeros(k + 3, dtype=bool)
        mask[0] = True
        mask[k:] = True
        choice = int(self.policy(vector, mask, self._rng))
        if choice == 0:
            self._sent.append(action)
            return Screen(action)
        tool = parsed.tool_call.tool if parsed.tool_call is not None else None
        if choice == k:
            text = ASK_TEXT.format(plan=describe_action(action))
            self.record("guard_ask", turn, tool=tool, detail=describe_action(action))
        elif choice == k + 2:
            text = FINISH_TEXT.format(done="; ".join(describe_action(a) for a in self._sent) or "nothing yet")
            self.record("guard_finish", turn, tool=tool, detail=describe_action(action))
        else:
            text = REFUSE_TEXT
            why = "" if choice == k + 1 else f"empty slot {choice} (a refusal) for "
            self.record("guard_refuse", turn, tool=tool, detail=why + describe_action(action))
        self._sent.append(text)
        return Screen(text)


def _embedder(saved: SavedGuard) -> Embedder:
    if saved.embedder == "hashing":
        return HashingEmbedder(dim=saved.dim)
    return TransformersEmbedder(saved.embedder)


def guard_defense(setup: DefenseSetup) -> DefenseMaker:
    """Loads the trained guard named by ``setup.policy`` once per run.

    Raises:
        ConfigError: no policy given, or it cannot be loaded (missing, malformed, an embedder that is gone).
    """
    if setup.policy is None:
        raise ConfigError("defense `guard` needs a trained guard policy: train one with `toolemu train guard "
                          "--out guard.zip` and pass --guard-policy guard.zip")
    path = Path(setup.policy)
    model, saved = load_guard(path)
    embedder = _embedder(saved)
    if embedder.dim != saved.dim:
        raise ConfigError(f"{path}: the guard was trained on {saved.dim}-dim embeddings but its embedder gives "
                          f"{embedder.dim}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    version = f"guard/{GUARD_DEFENSE_REVISION}-{digest}"
    policy = sb3_policy(model, masked=saved.masked)
    max_steps = setup.max_steps or DEFAULT_MAX_STEPS_EMULATED
    return lambda: GuardDefense(policy, saved, embedder, max_steps=max_steps, version=version)


def register_guard_defense() -> None:
    """Registers ``guard`` in ``DEFENSES`` (once; ``import toolemu`` calls this)."""
    if "guard" not in DEFENSES:
        register_defense("guard", guard_defense)
