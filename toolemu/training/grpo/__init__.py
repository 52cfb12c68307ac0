"""GRPO fine-tuning of a transformers LM agent in ToolEmu envs: config, rollouts, loss, trainer, weight sync."""

from toolemu.training.grpo.checkpoint import load_checkpoint, save_checkpoint
from toolemu.training.grpo.config import GRPOConfig, LoraSettings
from toolemu.training.grpo.rollout import Episode, group_advantages, play_episode, play_groups
from toolemu.training.grpo.sequence import TokenSequence, build_sequence
from toolemu.training.grpo.sync import LoraAdapterSync, StateDictSync, WeightSync
from toolemu.training.grpo.trainer import GRPOTrainer

__all__ = [
    "Episode",
    "GRPOConfig",
    "GRPOTrainer",
    "LoraAdapterSync",
    "LoraSettings",
    "StateDictSync",
    "TokenSequence",
    "WeightSync",
    "build_sequence",
    "group_advantages",
    "load_checkpoint",
    "play_episode",
    "play_groups",
    "save_checkpoint",
]
