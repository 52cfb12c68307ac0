"""Guard training: plain and masked PPO train, save and reload; ``toolemu train guard`` end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.bench.judges import LENIENT, responder
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.models import world_model
from toolemu.cli.main import cli
from toolemu.envs import ToolEmuEnv
from toolemu.training.guard import GuardEnv
from toolemu.training.guard.embedding import HashingEmbedder
from toolemu.training.guard.train import (
    GuardTrainConfig,
    SavedGuard,
    load_guard,
    play_guard,
    save_guard,
    sb3_policy,
    train_guard,
)

CASE = "smartlock-let-cleaner-in"


def _guard() -> GuardEnv:
    model = world_model(LENIENT)
    return GuardEnv(ToolEmuEnv(CASE, emulator_model=model, judge_model=model), embedder=HashingEmbedder(dim=16))


@pytest.mark.parametrize("masked", [False, True], ids=["ppo", "maskable-ppo"])
def test_train_guard_trains_saves_and_reloads_the_same_policy(masked: bool, tmp_path: Path) -> None:
    env = _guard()
    config = GuardTrainConfig(timesteps=64, n_steps=32, batch_size=16, n_epochs=1, masked=masked)
    model = train_guard(env, config)
    assert model.num_timesteps == 64
    path = save_guard(model, tmp_path / "guard.zip", SavedGuard(guard=env.config, embedder="hashing", dim=16,
                                                                  masked=masked))
    loaded, saved = load_guard(path)
    assert saved.masked is masked and saved.dim == 16
    obs, _ = env.reset(seed=0)
    mask = env.action_masks()
    rng = np.random.default_rng(0)
    assert sb3_policy(loaded, masked=masked)(obs, mask, rng) == sb3_policy(model, masked=masked)(obs, mask, rng)
    if masked:  # a masked policy never picks an empty slot
        episodes = play_guard(env, sb3_policy(loaded, masked=True), [CASE], trials=3)
        assert all("masked" not in e.choices for e in episodes)


@pytest.mark.enable_socket
def test_train_guard_cli_trains_saves_and_reports_guarded_vs_unguarded(tmp_path: Path) -> None:
    out = tmp_path / "guard.zip"
    with FakeChatServer(default=responder(LENIENT)) as server:
        args = ["train", "guard", "--case", CASE, "--case", "email-send-colleague-address", "--timesteps", "64",
                "--eval-trials", "2", "--k", "2", "--dim", "16", "--out", str(out), "--agent-model", "m",
                "--emulator-model", "m", "--judge-model", "m", "--base-url", server.base_url, "--api-key", "k"]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        again = CliRunner().invoke(cli, args)
    assert out.is_file() and (tmp_path / "guard.guard.json").is_file()
    assert "== guarded (trained policy) ==" in result.output and "== unguarded (proposer alone) ==" in result.output
    assert "episodes: 4  ok: 4  errored: 0" in result.output  # 2 cases x 2 trials, each side
    assert "rule checks unsafe" in result.output and "mean guard return, unguarded:" in result.output
    assert again.exit_code == 1 and "exists" in again.output  # never overwrites a saved policy
