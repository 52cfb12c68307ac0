"""``GRPOTrainer``: group-relative policy optimisation of a transformers LM acting in ToolEmu episodes.

One step reads top to bottom: sample cases, play G episodes of each (concurrently), normalise the terminal
rewards within each group, and take one gradient step on the policy's own tokens with a KL penalty to the
frozen reference. Everything is synchronous: step n+1's rollouts start after step n's update and weight sync.
"""

from __future__ import annotations

import copy
import logging
import math
import random
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from toolemu.agents import ReActAgent
from toolemu.core.errors import ConfigError
from toolemu.envs import EnvConfig, ToolEmuEnv
from toolemu.llm import ChatModel
from toolemu.llm.transformers_local import TransformersChatModel
from toolemu.testcases import Case
from toolemu.training.common import MetricsSink
from toolemu.training.grpo.checkpoint import load_checkpoint, save_checkpoint
from toolemu.training.grpo.config import GRPOConfig, LoraSettings
from toolemu.training.grpo.loss import grpo_loss, pad_batch, token_logprobs
from toolemu.training.grpo.rollout import Episode, StepSeeded, group_advantages, play_groups
from toolemu.training.grpo.sequence import TokenSequence, build_sequence
from toolemu.training.grpo.sync import WeightSync

logger = logging.getLogger(__name__)


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise ConfigError("GRPO needs torch: pip install 'toolemu[transformers,training]'") from e
    return torch


def _wrap_lora(model: Any, lora: LoraSettings) -> Any:
    try:
        import peft
    except ImportError as e:
        raise ConfigError("LoRA needs peft: pip install 'toolemu[training]'") from e
    config = peft.LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                             target_modules=list(lora.target_modules), task_type="CAUSAL_LM")
    try:
        return peft.get_peft_model(model, config)
    except ValueError as e:
        raise ConfigError(f"LoRA target modules {list(lora.target_modules)} do not fit the model: {e}") from e


class GRPOTrainer:
    """Fine-tunes ``policy`` on ``cases`` with GRPO.

    Args:
        policy: The transformers model to train (updated in place; with LoRA its ``model`` becomes a
            ``PeftModel``).
        cases: Cases to sample from.
        config: Hyperparameters.
        env_config: How each episode's env is built (emulator, judges, ``evaluate="rules"``...).
        out_dir: Checkpoints and metrics go here; ``None`` keeps nothing on disk.
        rollout_model: Who generates rollouts: ``None`` for the policy itself (in-process), or a chat model
            served elsewhere (an OpenAI-compatible vLLM server) with the same tokenizer and chat template.
        weight_sync: Publishes the updated weights to that server after every step.
        metrics: Where metrics go (default: ``out_dir/metrics.jsonl``).

    Raises:
        ConfigError: no cases, a rollout server without a weight sync, or LoRA/torch problems.
    """

    def __init__(self, policy: TransformersChatModel, cases: Sequence[Case], config: GRPOConfig, *,
                 env_config: EnvConfig | None = None, out_dir: Path | None = None,
                 rollout_model: ChatModel | None = None, weight_sync: WeightSync | None = None,
                 metrics: MetricsSink | None = None) -> None:
        if not cases:
            raise ConfigError("GRPO needs at least one case to train on")
        if rollout_model is not None and weight_sync is None:
            raise ConfigError(
                "a rollout server needs a weight sync, or its rollouts never see the updates; pass weight_sync "
                "(LoraAdapterSync for vLLM, StateDictSync for a colocated server)"
            )
        torch = _torch()
        torch.manual_seed(config.seed)
        self.policy = policy
        self.cases = tuple(cases)
        self.config = config
        self.env_config = env_config or EnvConfig()
        self.out_dir = out_dir
        self.rollout_model: ChatModel = rollout_model if rollout_model is not None else policy
        self.weight_sync = weight_sync
        self.metrics = metrics if metrics is not None else MetricsSink(out_dir)
        if config.lora is not None:
            policy.model = _wrap_lora(policy.model, config.lora)
        self.model = policy.model
        self.reference: Any | None = None
        if config.kl_coef > 0 and config.lora is None:
            self.reference = copy.deepcopy(self.model).eval()
            for p in self.reference.parameters():
                p.requires_grad_(False)
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
        self.step = 0
        self.rng = random.Random(config.seed)
        self._envs: dict[str, list[ToolEmuEnv]] = {}
        self.last_episodes: list[Episode] = []
        """The episodes of the latest step (conversations, rewards, statuses)."""
        tokenizer = policy.tokenizer
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self._device = next(self.model.parameters()).device

    # -- the loop ------------------------------------------------------------------------------------------

    def train(self) -> list[dict[str, float]]:
        """Runs steps until ``config.steps``, checkpointing as configured.

        Returns:
            The metrics of each step run by this call.
        """
        rows = []
        try:
            while self.step < self.config.steps:
                rows.append(self.train_step())
                every = self.config.save_every
                if self.out_dir is not None and (self.step == self.config.steps or (every and self.step % every == 0)):
                    self.save()
        finally:
            self.close_envs()
        return rows

    def train_step(self) -> dict[str, float]:
        """Plays one batch of groups and takes one optimisation step; returns its metrics."""
        torch = _torch()
        start = time.perf_counter()
        episodes = self.last_episodes = self.rollout()
        rollout_s = time.perf_counter() - start
        advantages = group_advantages(episodes, scale=self.config.scale_rewards)
        batch = [(build_sequence(self.policy.tokenizer, e.messages, max_tokens=self.config.max_sequence_tokens), a)
                 for e, a in zip(episodes, advantages, strict=True) if a is not None]
        batch = [(s, a) for s, a in batch if s.policy_tokens > 0]
        update = self._update(torch, batch)
        self.step += 1
        if self.weight_sync is not None:
            served = self.weight_sync.push(self.model, self.step)
            if served is not None:
                self.rollout_model = served
        row = self._metrics(episodes, batch, update) | {"rollout/seconds": rollout_s,
                                                       "train/seconds": time.perf_counter() - start - rollout_s}
        self.metrics.record(self.step, row)
        return row

    def rollout(self) -> list[Episode]:
        """Plays this step's groups: ``cases_per_step`` cases (seeded draw), ``group_size`` episodes each."""
        cfg = self.config
        cases = [self.rng.choice(self.cases) for _ in range(cfg.cases_per_step)]
        envs, groups = [], []
        taken: dict[str, int] = {}
        for g, case in enumerate(cases):
            for _ in range(cfg.group_size):
                envs.append(self._env(case, taken.get(case.id, 0)))
                taken[case.id] = taken.get(case.id, 0) + 1
                groups.append(g)
        # Seeds depend only on (seed, step, index): a resumed run replays the same rollouts.
        seeds = [(cfg.seed * 1_000_003 + self.step * 10_007 + i) % (2**31) for i in range(len(envs))]
        self.model.eval()

        def make_agent(seed: int) -> ReActAgent:
            return ReActAgent(StepSeeded(self.rollout_model, seed), variant=cfg.variant, max_tokens=cfg.max_new_tokens,
                              temperature=cfg.temperature, seed=seed)

        return play_groups(envs, make_agent, groups=groups, seeds=seeds, workers=cfg.rollout_workers)

    # -- internals -----------------------------------------------------------------------------------------

    def _env(self, case: Case, index: int) -> ToolEmuEnv:
        pool = self._envs.setdefault(case.id, [])
        while len(pool) <= index:
            pool.append(ToolEmuEnv(case, self.env_config))
        return pool[index]

    def close_envs(self) -> None:
        """Closes every env the trainer opened (sandboxes included)."""
        for pool in self._envs.values():
            for env in pool:
                env.close()
        self._envs.clear()

    def _reference_logprobs(self, torch: Any, micro: Any) -> Any | None:
        if self.config.kl_coef <= 0:
            return None
        with torch.no_grad():
            if self.reference is not None:
                return token_logprobs(torch, self.reference, micro)
            disable = getattr(self.model, "disable_adapter", None)
            with disable() if disable is not None else nullcontext():
                return token_logprobs(torch, self.model, micro)

    def _update(self, torch: Any, batch: list[tuple[TokenSequence, float]]) -> dict[str, float]:
        total = sum(s.policy_tokens for s, _ in batch)
        if not batch:
            return {"train/loss": math.nan, "train/kl": math.nan, "train/grad_norm": math.nan, "train/tokens": 0.0}
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum, kl_sum = 0.0, 0.0
        size = self.config.micro_batch_size
        for i in range(0, len(batch), size):
            chunk = batch[i : i + size]
            micro = pad_batch(torch, [s for s, _ in chunk], [a for _, a in chunk], self._pad_id, str(self._device))
            ref = self._reference_logprobs(torch, micro)
            parts = grpo_loss(torch, token_logprobs(torch, self.model, micro), ref, micro,
                              kl_coef=self.config.kl_coef, total_tokens=total)
            parts.loss.backward()
            loss_sum += float(parts.loss.detach())
            kl_sum += parts.kl_sum
        params = [p for p in self.model.parameters() if p.requires_grad]
        max_norm = self.config.max_grad_norm if self.config.max_grad_norm is not None else math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm))
        self.optimizer.step()
        self.model.eval()
        return {"train/loss": loss_sum, "train/kl": kl_sum / max(total, 1), "train/grad_norm": grad_norm,
                "train/tokens": float(total)}

    def _metrics(self, episodes: list[Episode], batch: list[tuple[TokenSequence, float]],
                 update: dict[str, float]) -> dict[str, float]:
        scored = [e.reward for e in episodes if not e.errored]
        mean = sum(scored) / len(scored) if scored else math.nan
        std = math.sqrt(sum((r - mean) ** 2 for r in scored) / len(scored)) if scored else math.nan
        flat = 0
        for g in {e.group for e in episodes}:
            rewards = {e.reward for e in episodes if e.group == g and not e.errored}
            flat += len(rewards) <= 1
        return {
            "rollout/episodes": float(len(episodes)),
            "rollout/errors": float(sum(e.errored for e in episodes)),
            "rollout/reward_mean": mean,
            "rollout/reward_std": std,
            "rollout/steps_mean": sum(e.steps for e in episodes) / len(episodes),
            "rollout/completed": float(sum(e.status == "completed" for e in episodes)),
            "rollout/flat_groups": float(flat),
            "train/learning_rate": self.config.learning_rate,
            "train/sequences": float(len(batch)),
            **update,
        }

    # -- checkpoints ---------------------------------------------------------------------------------------

    def save(self, folder: Path | None = None) -> Path:
        """Writes a checkpoint (weights or adapter, tokenizer, optimizer, step, RNG states).

        Returns:
            The checkpoint folder (``out_dir/checkpoint-<step>`` by default).

        Raises:
            ConfigError: no folder given and the trainer has no ``out_dir``.
        """
        if folder is None:
            if self.out_dir is None:
                raise ConfigError("GRPOTrainer.save() needs a folder: the trainer has no out_dir")
            folder = self.out_dir / f"checkpoint-{self.step:06d}"
        return save_checkpoint(folder, model=self.model, tokenizer=self.policy.tokenizer, optimizer=self.optimizer,
                               step=self.step, rng=self.rng, config=self.config)

    def resume(self, folder: Path) -> None:
        """Loads a checkpoint written by :meth:`save`: weights, optimizer, step and RNG states.

        Raises:
            ConfigError: the folder is not a checkpoint, or its trainable weights do not fit this model.
        """
        state = load_checkpoint(folder, model=self.model, optimizer=self.optimizer, rng=self.rng)
        self.step = state
        logger.info("resumed from %s at step %d", folder, self.step)
