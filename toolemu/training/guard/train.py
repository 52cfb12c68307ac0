"""Trains the guard policy with SB3's PPO (or sb3-contrib's ``MaskablePPO``), saves and reloads it, and plays
fixed policies (trained, random, always-refuse, unguarded) through a ``GuardEnv`` into bench-metric records."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import check_output_path
from toolemu.core.trajectory import ErrorRecord
from toolemu.core.types import Frozen
from toolemu.envs import INFO_ERROR, INFO_EVALUATION
from toolemu.rewards.evaluation import Evaluation
from toolemu.rewards.metrics import MetricValue, bootstrap_mean
from toolemu.training.guard.env import INFO_CHOICE, GuardConfig, GuardEnv

logger = logging.getLogger(__name__)

Observation = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]
GuardPolicy = Callable[[Observation, Mask, np.random.Generator], int]
"""Chooses a guard action from the observation and the action mask."""


class GuardTrainConfig(Frozen):
    """PPO hyperparameters for the guard (SB3's names; defaults sized for a small suite on a CPU)."""

    timesteps: int = Field(default=4096, ge=1)
    """Environment steps to train for."""
    n_steps: int = Field(default=256, ge=2)
    """Steps collected per update."""
    batch_size: int = Field(default=64, ge=2)
    """Minibatch size."""
    n_epochs: int = Field(default=8, ge=1)
    """Passes over each rollout."""
    learning_rate: float = Field(default=1e-3, gt=0)
    """Adam step size."""
    gamma: float = Field(default=0.99, gt=0, le=1)
    """Discount (episodes are short and the reward terminal)."""
    ent_coef: float = Field(default=0.01, ge=0)
    """Entropy bonus."""
    net_arch: tuple[int, ...] = (64, 64)
    """Hidden layers of the policy and value networks."""
    masked: bool = False
    """Train sb3-contrib's ``MaskablePPO`` on ``GuardEnv.action_masks``; else plain PPO (masked choices refuse,
    penalised)."""
    seed: int = 0
    """Seed of the networks and the rollouts."""


def _algorithm(masked: bool) -> Any:
    if not masked:
        from stable_baselines3 import PPO

        return PPO
    try:
        from sb3_contrib import MaskablePPO
    except ImportError as e:
        raise ConfigError(f"masked training needs sb3-contrib: pip install 'toolemu[training]' ({e})") from e
    return MaskablePPO


def train_guard(env: GuardEnv, config: GuardTrainConfig | None = None) -> Any:
    """Trains a guard policy on ``env`` and returns the SB3 model.

    Raises:
        InfraError: an episode ended in an infra error (``GuardConfig.raise_on_error``).
        ConfigError: ``masked`` without sb3-contrib installed.
    """
    cfg = config or GuardTrainConfig()
    algorithm = _algorithm(cfg.masked)
    # SB3 always collects whole rollouts: a budget below one rollout shrinks the rollout, not the other way.
    n_steps = max(2, min(cfg.n_steps, cfg.timesteps))
    model = algorithm(
        "MlpPolicy", env, n_steps=n_steps, batch_size=min(cfg.batch_size, n_steps), n_epochs=cfg.n_epochs,
        learning_rate=cfg.learning_rate, gamma=cfg.gamma, ent_coef=cfg.ent_coef, seed=cfg.seed, verbose=0,
        policy_kwargs={"net_arch": list(cfg.net_arch)}, device="cpu",
    )
    model.learn(total_timesteps=cfg.timesteps)
    return model


class SavedGuard(Frozen):
    """What a saved guard needs besides its weights (``<policy>.guard.json`` beside the ``.zip``)."""

    guard: GuardConfig
    """The env shape the policy was trained on."""
    embedder: Literal["hashing"] | str
    """``hashing``, or the transformers encoder's folder."""
    dim: int
    """Embedding size."""
    masked: bool
    """Trained with ``MaskablePPO``."""


def sidecar_path(path: Path) -> Path:
    """Where the guard description of a policy file lives."""
    return path.with_name(path.name.removesuffix(".zip") + ".guard.json")


def save_guard(model: Any, path: Path, saved: SavedGuard) -> Path:
    """Saves the policy (``.zip``, a new file) and its description (``.guard.json``).

    Raises:
        ConfigError: the path does not end in ``.zip``, exists, or its folder does not.
    """
    if path.suffix != ".zip":
        raise ConfigError(f"--out {path}: a guard policy is saved as a .zip file; name it {path.name}.zip")
    check_output_path(path, new=True)
    check_output_path(sidecar_path(path), new=True)
    model.save(str(path))
    sidecar_path(path).write_text(saved.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return path


def load_guard(path: Path) -> tuple[Any, SavedGuard]:
    """Loads a policy saved by ``save_guard`` with its description.

    Raises:
        ConfigError: the policy or its ``.guard.json`` is missing or malformed.
    """
    side = sidecar_path(path)
    if not path.is_file() or not side.is_file():
        raise ConfigError(f"{path}: a saved guard is a .zip with a .guard.json beside it; {side.name} or the policy "
                          "is missing")
    try:
        saved = SavedGuard.model_validate(json.loads(side.read_text(encoding="utf-8")))
    except ValueError as e:
        raise ConfigError(f"{side}: not a guard description ({str(e).splitlines()[0]})") from None
    return _algorithm(saved.masked).load(str(path), device="cpu"), saved


def sb3_policy(model: Any, *, masked: bool = False) -> GuardPolicy:
    """The trained model as a deterministic guard policy."""

    def act(obs: Observation, mask: Mask, rng: np.random.Generator) -> int:
        kwargs = {"action_masks": mask} if masked else {}
        action, _ = model.predict(obs, deterministic=True, **kwargs)
        return int(action)

    return act


def random_policy(obs: Observation, mask: Mask, rng: np.random.Generator) -> int:
    """Uniform over the valid actions (candidates, ask, refuse, finish)."""
    return int(rng.choice(np.flatnonzero(mask)))


def refuse_policy(env: GuardEnv) -> GuardPolicy:
    """Always refuses."""
    return lambda obs, mask, rng: env.refuse_action


def unguarded_policy(env: GuardEnv) -> GuardPolicy:
    """The proposer left alone: a uniformly random candidate (an agent's own sample), finishing when none."""

    def act(obs: Observation, mask: Mask, rng: np.random.Generator) -> int:
        slots = np.flatnonzero(mask[: env.config.k])
        return int(rng.choice(slots)) if slots.size else env.finish_action

    return act


class GuardEpisode(Frozen):
    """One evaluated guard episode, readable by the bench metrics (``compute_metrics``)."""

    case_id: str
    """The case."""
    risk_category: str | None = None
    """The case's risk category value."""
    intent: str | None = None
    """The case's intent value."""
    toolkits: tuple[str, ...] = ()
    """The case's toolkits."""
    evaluation: Evaluation | None = None
    """The terminal evaluation; ``None`` when the episode errored before it."""
    guard_return: float
    """Sum of the guard env's rewards (the evaluation's reward minus masked-choice penalties; NaN on error)."""
    choices: tuple[str, ...] = ()
    """What each guard action did."""
    error: ErrorRecord | None = None
    """The infra error that ended the episode, if any."""


def play_guard(env: GuardEnv, policy: GuardPolicy, case_ids: Sequence[str], *, trials: int = 1,
               seed: int = 0) -> list[GuardEpisode]:
    """Plays ``policy`` for ``trials`` episodes of each case (``env`` must wrap a suite holding them).

    Errored episodes are returned with their error and no evaluation, never scored (build ``env`` with
    ``GuardConfig(raise_on_error=False)``).
    """
    rng = np.random.default_rng(seed)
    episodes: list[GuardEpisode] = []
    for trial in range(trials):
        for case_id in case_ids:
            obs, info = env.reset(seed=seed + trial, options={"case": case_id})
            total, choices = 0.0, []
            while True:
                obs, reward, terminated, truncated, info = env.step(policy(obs, env.action_masks(), rng))
                total += float(reward)
                if INFO_CHOICE in info:
                    choices.append(str(info[INFO_CHOICE]))
                if terminated or truncated:
                    break
            case = env.episode.case
            evaluation, error = info.get(INFO_EVALUATION), info.get(INFO_ERROR)
            episodes.append(GuardEpisode(
                case_id=case.id, risk_category=case.risk_category.value if case.risk_category else None,
                intent=case.intent.value if case.intent else None, toolkits=case.toolkits,
                evaluation=evaluation if isinstance(evaluation, Evaluation) else None, guard_return=total,
                choices=tuple(choices), error=error if isinstance(error, ErrorRecord) else None,
            ))
    return episodes


def mean_return(episodes: Sequence[GuardEpisode]) -> MetricValue:
    """Mean guard return over the episodes that did not error, with its bootstrap CI and n."""
    return bootstrap_mean([e.guard_return for e in episodes if e.error is None and e.evaluation is not None])
