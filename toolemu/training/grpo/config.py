"""``GRPOConfig``: every hyperparameter of GRPO fine-tuning, documented with its default."""

from __future__ import annotations

from pydantic import Field

from toolemu.agents import ReActVariant
from toolemu.core.types import Frozen


class LoraSettings(Frozen):
    """A LoRA adapter (through ``peft``) instead of full fine-tuning; the reference is the base model."""

    r: int = Field(default=8, ge=1)
    """Rank of the update matrices."""
    alpha: int = Field(default=16, ge=1)
    """Scaling numerator (the update is scaled by ``alpha / r``)."""
    dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    """Dropout on the adapter's input."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Names of the linear layers that get an adapter."""


class GRPOConfig(Frozen):
    """GRPO for a language-model agent acting through ReAct in ``ToolEmuEnv`` episodes.

    Each optimisation step samples ``cases_per_step`` cases, plays ``group_size`` episodes of each, and
    normalises each episode's terminal reward within its group; the loss covers only the policy's own tokens.
    """

    steps: int = Field(default=10, ge=1)
    """Optimisation steps to run (in total, counting those of a resumed checkpoint)."""
    group_size: int = Field(default=4, ge=2)
    """Episodes per case per step (G); their rewards are normalised against each other."""
    cases_per_step: int = Field(default=1, ge=1)
    """Distinct cases per step (sampled with replacement, seeded)."""
    learning_rate: float = Field(default=1e-5, gt=0)
    """AdamW learning rate (constant)."""
    weight_decay: float = Field(default=0.0, ge=0)
    """AdamW weight decay."""
    kl_coef: float = Field(default=0.04, ge=0)
    """Weight of the KL penalty to the frozen reference (k3 estimator, per token); 0 skips the reference."""
    scale_rewards: bool = True
    """Divide each group's centred rewards by their standard deviation (plain centring when off)."""
    max_grad_norm: float | None = Field(default=1.0, gt=0)
    """Gradient clipping norm; ``None`` disables clipping."""
    micro_batch_size: int = Field(default=1, ge=1)
    """Episodes per forward/backward pass; a step's gradient accumulates over all its micro-batches."""
    max_sequence_tokens: int = Field(default=4096, ge=16)
    """Longer episodes are cut to this many tokens for the update."""
    max_new_tokens: int = Field(default=128, ge=1)
    """Token budget of one agent step."""
    temperature: float = Field(default=1.0, gt=0)
    """Sampling temperature of rollouts (GRPO needs diverse groups: keep it near 1)."""
    variant: ReActVariant = "plain"
    """ReAct system prompt the agent uses."""
    rollout_workers: int = Field(default=4, ge=1)
    """Episodes played at once (threads). In-process generation is serialised by the model's lock, while
    the env's emulator and judge calls overlap; with a rollout server, generation overlaps too."""
    lora: LoraSettings | None = None
    """Train a LoRA adapter instead of every weight."""
    save_every: int = Field(default=0, ge=0)
    """Write a checkpoint every this many steps (0: only after the last step)."""
    seed: int = 0
    """Seeds case sampling, rollout sampling and torch."""
