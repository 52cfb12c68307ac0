"""toolemu.training."""
