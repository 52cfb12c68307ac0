"""GRPO checkpoints: a loadable model folder plus the trainer state that makes a run resume where it stopped.

Layout: ``model/`` (``save_pretrained`` of the model, or of the LoRA adapter, and the tokenizer; a full model
loads as ``hf:<checkpoint>/model``) and ``trainer_state.pt`` (trainable weights, optimizer, step, RNG states,
config).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from toolemu.core.errors import ConfigError
from toolemu.training.grpo.config import GRPOConfig

STATE_FILE = "trainer_state.pt"
MODEL_FOLDER = "model"


def save_checkpoint(folder: Path, *, model: Any, tokenizer: Any, optimizer: Any, step: int, rng: random.Random,
                    config: GRPOConfig) -> Path:
    """Writes the checkpoint to ``folder`` (created) and returns it."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder / MODEL_FOLDER))
    tokenizer.save_pretrained(str(folder / MODEL_FOLDER))
    trainable = {n: p.detach().cpu().clone() for n, p in model.named_parameters() if p.requires_grad}
    state = {
        "step": step,
        "trainable": trainable,
        "optimizer": optimizer.state_dict(),
        "rng": rng.getstate(),
        "torch_rng": torch.get_rng_state(),
        "config": config.model_dump(mode="json"),
    }
    torch.save(state, folder / STATE_FILE)
    return folder


def load_checkpoint(folder: Path, *, model: Any, optimizer: Any, rng: random.Random) -> int:
    """Restores weights, optimizer and RNG states from ``folder``; returns the step it was saved at.

    Raises:
        ConfigError: ``folder`` has no ``trainer_state.pt``, or its weights do not match the model's
            trainable parameters (a different model, or LoRA on one side only).
    """
    import torch

    path = folder / STATE_FILE
    if not path.is_file():
        raise ConfigError(f"{folder} is not a GRPO checkpoint: {STATE_FILE} is missing")
    state = torch.load(path, map_location="cpu", weights_only=False)
    trainable = state["trainable"]
    params = dict(model.named_parameters())
    expected = {n for n, p in params.items() if p.requires_grad}
    if set(trainable) != expected:
        missing = sorted(expected - set(trainable))[:3]
        extra = sorted(set(trainable) - expected)[:3]
        raise ConfigError(
            f"checkpoint {folder} does not fit this model (missing {missing}, unexpected {extra}); resume with the "
            "same model and the same LoRA setting"
        )
    with torch.no_grad():
        for name, value in trainable.items():
            params[name].copy_(value.to(params[name].device))
    optimizer.load_state_dict(state["optimizer"])
    version, internal, gauss = state["rng"]
    rng.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["torch_rng"])
    return int(state["step"])
