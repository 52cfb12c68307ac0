"""``toolemu train``: the group of training commands (each route registers its sub-command here)."""

from __future__ import annotations

from toolemu.cli.main import cli


@cli.group("train")
def train_group() -> None:
    """Fine-tune agents on the envs."""
