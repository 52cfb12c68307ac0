"""What every training route shares: the training reward preset and shaping, and the metrics sink."""

from toolemu.training.common.metrics import METRICS_FILE, MetricsSink
from toolemu.training.common.reward import TRAINING_REWARD, ShapedReward, TrainingReward

__all__ = ["METRICS_FILE", "TRAINING_REWARD", "MetricsSink", "ShapedReward", "TrainingReward"]
