"""``toolemu train grpo`` end to end: a tiny local model, emulator and judges on a local OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.bench.judges import responder
from tests.fakes.chat_server import FakeChatServer
from tests.fakes.toy import TOY_CASE, tiny_policy_folder
from tests.prerequisites import needs
from toolemu.cli.main import cli

pytestmark = needs(modules=("peft",), install="pip install -e '.[training]'")


@pytest.mark.enable_socket
def test_train_grpo_trains_checkpoints_and_resumes(tmp_path: Path) -> None:
    import torch

    torch.set_num_threads(1)
    model = tiny_policy_folder(tmp_path / "model")
    case_file = tmp_path / "toy.yaml"
    case_file.write_text(yaml.safe_dump(TOY_CASE.model_dump(mode="json", exclude_none=True)))
    out = tmp_path / "run"
    with FakeChatServer(default=responder()) as server:
        common = ["train", "grpo", "--model", str(model), "--case", str(case_file), "--out", str(out),
                  "--group-size", "2", "--max-new-tokens", "4", "--learning-rate", "0.01", "--emulator-model", "m",
                  "--judge-model", "m", "--base-url", server.base_url, "--api-key", "k", "--evaluate", "full"]
        first = CliRunner().invoke(cli, [*common, "--steps", "1"])
        assert first.exit_code == 0, first.output
        second = CliRunner().invoke(cli, [*common, "--steps", "2", "--resume", str(out / "checkpoint-000001")])
        assert second.exit_code == 0, second.output
    assert "step 1: rollout/completed=" in first.stdout and "step 2: " in second.stdout
    assert "step 1:" not in second.stdout  # resumed after step 1
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]
    assert (out / "checkpoint-000002" / "trainer_state.pt").is_file()


def test_train_grpo_rejects_a_rollout_server_without_its_model_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["train", "grpo", "--model", str(tmp_path), "--out", str(tmp_path / "o"),
                                      "--rollout-base-url", "http://127.0.0.1:9/v1"])
    assert result.exit_code == 1
    assert result.output.strip() == ("error: --rollout-base-url and --rollout-model go together (the server and "
                                     "the base model name)")
