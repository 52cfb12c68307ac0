"""Training on the envs: the training reward preset and shaping, the SB3 guard policy, SFT/DPO data export."""

from toolemu.training.embedding import Embedder, HashingEmbedder, TransformersEmbedder
from toolemu.training.export import DpoExample, SftExample, export_records
from toolemu.training.guard import GuardConfig, GuardEnv
from toolemu.training.guard_train import GuardTrainConfig, load_guard, save_guard, train_guard
from toolemu.training.proposal import AgentProposer, Proposer, ReferenceProposer
from toolemu.training.reward import TRAINING_REWARD, ShapedReward, TrainingReward

__all__ = [
    "TRAINING_REWARD",
    "AgentProposer",
    "DpoExample",
    "Embedder",
    "GuardConfig",
    "GuardEnv",
    "GuardTrainConfig",
    "HashingEmbedder",
    "Proposer",
    "ReferenceProposer",
    "SftExample",
    "ShapedReward",
    "TrainingReward",
    "TransformersEmbedder",
    "export_records",
    "load_guard",
    "save_guard",
    "train_guard",
]
