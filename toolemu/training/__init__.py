"""Training on the envs, one subpackage per route over shared pieces:

- ``common``: the training reward preset and shaping, the metrics sink;
- ``guard``: an SB3 guard policy choosing among proposed actions;
- ``grpo``: GRPO fine-tuning of a transformers LM agent;
- ``trl``: envs for TRL's ``GRPOTrainer``;
- ``export``: SFT/DPO datasets from bench results.

Importing ``toolemu.training`` loads none of the routes' optional dependencies (torch, SB3, TRL).
"""

from toolemu.training.common import TRAINING_REWARD, MetricsSink, ShapedReward, TrainingReward

__all__ = ["TRAINING_REWARD", "MetricsSink", "ShapedReward", "TrainingReward"]
