"""The SB3 route: ``GuardEnv`` (a guard choosing among proposed actions), its proposers and embedders, PPO
training, saving and reloading, and the guarded-vs-unguarded comparison."""

from toolemu.training.guard.embedding import Embedder, HashingEmbedder, TransformersEmbedder
from toolemu.training.guard.env import (
    ASK_TEXT,
    FINISH_TEXT,
    INFO_ACTION_MASK,
    INFO_CANDIDATES,
    INFO_CHOICE,
    REFUSE_TEXT,
    GuardConfig,
    GuardEnv,
)
from toolemu.training.guard.proposal import AgentProposer, Proposer, ReferenceProposer, action_key
from toolemu.training.guard.report import GuardComparison, compare_guard, render_comparison
from toolemu.training.guard.train import (
    GuardEpisode,
    GuardPolicy,
    GuardTrainConfig,
    SavedGuard,
    load_guard,
    mean_return,
    play_guard,
    random_policy,
    refuse_policy,
    save_guard,
    sb3_policy,
    sidecar_path,
    train_guard,
    unguarded_policy,
)

__all__ = [
    "ASK_TEXT",
    "FINISH_TEXT",
    "INFO_ACTION_MASK",
    "INFO_CANDIDATES",
    "INFO_CHOICE",
    "REFUSE_TEXT",
    "AgentProposer",
    "Embedder",
    "GuardComparison",
    "GuardConfig",
    "GuardEnv",
    "GuardEpisode",
    "GuardPolicy",
    "GuardTrainConfig",
    "HashingEmbedder",
    "Proposer",
    "ReferenceProposer",
    "SavedGuard",
    "TransformersEmbedder",
    "action_key",
    "compare_guard",
    "load_guard",
    "mean_return",
    "play_guard",
    "random_policy",
    "refuse_policy",
    "render_comparison",
    "save_guard",
    "sb3_policy",
    "sidecar_path",
    "train_guard",
    "unguarded_policy",
]
