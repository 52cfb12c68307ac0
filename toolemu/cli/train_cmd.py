"""``toolemu train``: the group of training commands, one sub-command per route."""

from __future__ import annotations

import click

from toolemu.cli.train_grpo_cmd import grpo_command
from toolemu.cli.train_guard_cmd import guard_command


@click.group("train")
def train_group() -> None:
    """Fine-tune agents on the envs."""


train_group.add_command(grpo_command)
train_group.add_command(guard_command)
