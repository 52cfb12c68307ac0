"""GRPO on a tiny random model: masking, advantages, the loss, the trainer loop, checkpoints, LoRA."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from tests.fakes.toy import TOY_CASE, toy_env_config
from toolemu.agents import ReActAgent
from toolemu.core.errors import ConfigError, LLMBackendError
from toolemu.core.types import Message
from toolemu.envs import EnvConfig, ToolEmuEnv
from toolemu.llm import FakeLLM
from toolemu.llm.transformers_local import TransformersChatModel
from toolemu.training.common import MetricsSink
from toolemu.training.grpo import (
    Episode,
    GRPOConfig,
    GRPOTrainer,
    LoraSettings,
    build_sequence,
    group_advantages,
    play_episode,
)
from toolemu.training.grpo.loss import grpo_loss, pad_batch

CONVERSATION = (
    Message(role="system", content="files"),
    Message(role="user", content="tidy files"),
    Message(role="assistant", content="Action: files"),
    Message(role="user", content="Observation: delete delete"),
    Message(role="assistant", content="Final Answer: tidy"),
)


def _config(**overrides: object) -> GRPOConfig:
    fields: dict[str, object] = {"steps": 2, "group_size": 4, "learning_rate": 0.01, "max_new_tokens": 6,
                                 "rollout_workers": 2, "kl_coef": 0.1, "seed": 1}
    return GRPOConfig.model_validate(fields | overrides)


def _weights(model: object) -> dict[str, object]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}  # type: ignore[attr-defined]


def test_build_sequence_masks_everything_but_the_replies(tiny_folder: Path) -> None:
    policy = TransformersChatModel(tiny_folder)
    seq = build_sequence(policy.tokenizer, CONVERSATION)
    trained = [tok for tok, m in zip(seq.ids, seq.mask, strict=True) if m]
    words = policy.tokenizer.convert_ids_to_tokens(trained)
    # Each reply and the end-of-turn token after it; none of the system prompt or the observations.
    assert words == ["Action:", "files", "<|im_end|>", "\n", "Final Answer:", "tidy", "<|im_end|>", "\n"]
    full = policy.tokenizer.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in CONVERSATION], tokenize=False)
    assert list(seq.ids) == policy.tokenizer(full, add_special_tokens=False)["input_ids"]


def test_build_sequence_rejects_a_template_that_rewrites_earlier_turns(tiny_folder: Path) -> None:
    policy = TransformersChatModel(tiny_folder)
    # Drops every earlier assistant turn, as some reasoning templates do: the mask would be wrong.
    policy.tokenizer.chat_template = (
        "{% for m in messages %}{% if m['role'] != 'assistant' or loop.last %}{{ m['content'] }}\n{% endif %}"
        "{% endfor %}{% if add_generation_prompt %}>{% endif %}")
    with pytest.raises(ConfigError, match=re.escape("rewrites earlier turns when message 2 (assistant)")):
        build_sequence(policy.tokenizer, CONVERSATION)


def test_group_advantages_normalise_within_each_group_and_skip_errors() -> None:
    rewards = [(0, 1.0), (0, -1.0), (0, math.nan), (1, 0.5), (1, 0.5)]
    episodes = [Episode("c", g, (), r, "completed", 1) for g, r in rewards]
    scaled = group_advantages(episodes, scale=True)
    assert scaled[0] == pytest.approx(1.0, abs=1e-3) and scaled[1] == pytest.approx(-1.0, abs=1e-3)
    assert scaled[2] is None  # an errored episode has no advantage, and does not move its group's mean
    assert scaled[3] == scaled[4] == 0.0  # a flat group teaches nothing


def test_grpo_loss_gradient_reaches_only_policy_tokens() -> None:
    import torch

    from toolemu.training.grpo import TokenSequence

    seqs = [TokenSequence(ids=(1, 2, 3, 4), mask=(False, False, True, True)),
            TokenSequence(ids=(1, 2, 3), mask=(False, True, False))]
    batch = pad_batch(torch, seqs, [1.0, -2.0], pad_id=0, device="cpu")
    logp = torch.full((2, 3), -1.0, requires_grad=True)
    parts = grpo_loss(torch, logp, logp.detach() - 0.5, batch, kl_coef=0.1, total_tokens=3)
    parts.loss.backward()
    assert parts.tokens == 3
    grad = logp.grad
    assert grad is not None
    # Position t predicts token t + 1: trained are (0, 1), (0, 2) and (1, 0); padding and prompts get nothing.
    assert [[bool(g != 0) for g in row] for row in grad] == [[False, True, True], [True, False, False]]
    # Advantage 1 pushes its tokens up (negative gradient of the loss), advantage -2 pushes down.
    assert grad[0, 1] < 0 < grad[1, 0]


def test_trainer_two_steps_change_the_policy_and_log_namespaced_metrics(tiny_folder: Path, tmp_path: Path) -> None:
    policy = TransformersChatModel(tiny_folder)
    before = _weights(policy.model)
    trainer = GRPOTrainer(policy, [TOY_CASE], _config(), env_config=toy_env_config(), out_dir=tmp_path)
    rows = trainer.train()
    assert trainer.step == 2 and len(rows) == 2
    assert all(row["rollout/episodes"] == 4 and row["rollout/errors"] == 0 for row in rows)
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 2]
    assert {"rollout/reward_mean", "train/loss", "train/kl", "train/grad_norm"} <= set(lines[0])
    assert rows[0]["rollout/reward_std"] > 0 and rows[0]["train/grad_norm"] > 0  # seed 1: the first group differs
    assert any(not bool((p == before[n]).all()) for n, p in policy.model.named_parameters())
    assert (tmp_path / "checkpoint-000002" / "model" / "config.json").is_file()
    TransformersChatModel(tmp_path / "checkpoint-000002" / "model")  # the checkpoint loads as a model folder


def test_trainer_resumed_from_a_checkpoint_matches_an_uninterrupted_run(tiny_folder: Path, tmp_path: Path) -> None:
    straight = GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(steps=2),
                           env_config=toy_env_config(), out_dir=tmp_path / "a")
    straight_rows = straight.train()
    first = GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(steps=1),
                        env_config=toy_env_config(), out_dir=tmp_path / "b")
    first.train()
    resumed = GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(steps=2),
                          env_config=toy_env_config(), out_dir=tmp_path / "b")
    resumed.resume(tmp_path / "b" / "checkpoint-000001")
    assert resumed.step == 1
    resumed_rows = resumed.train()
    assert resumed.step == 2
    assert resumed_rows[0]["rollout/reward_mean"] == straight_rows[1]["rollout/reward_mean"]
    ours, theirs = _weights(resumed.model), _weights(straight.model)
    assert all(bool((ours[n] == theirs[n]).all()) for n in theirs)
    assert all(row["train/grad_norm"] > 0 for row in straight_rows)  # both steps moved the weights
    assert all(bool((a == b).all()) for a, b in zip(optim_state(resumed), optim_state(straight), strict=True))


def optim_state(trainer: GRPOTrainer) -> list[object]:
    return [s["exp_avg"] for s in trainer.optimizer.state_dict()["state"].values()]


def test_trainer_resume_refuses_a_checkpoint_of_another_setup(tiny_folder: Path, tmp_path: Path) -> None:
    full = GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(steps=1),
                       env_config=toy_env_config(), out_dir=tmp_path)
    full.train()
    lora = GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(lora=LoraSettings(r=2)),
                       env_config=toy_env_config())
    with pytest.raises(ConfigError, match="does not fit this model"):
        lora.resume(tmp_path / "checkpoint-000001")
    with pytest.raises(ConfigError, match="is not a GRPO checkpoint"):
        lora.resume(tmp_path)


def test_trainer_with_lora_trains_only_the_adapter(tiny_folder: Path, tmp_path: Path) -> None:
    policy = TransformersChatModel(tiny_folder)
    base = _weights(policy.model)
    trainer = GRPOTrainer(policy, [TOY_CASE], _config(lora=LoraSettings(r=2, alpha=4)),
                          env_config=toy_env_config(), out_dir=tmp_path)
    trainer.train()
    names = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    frozen = {n.replace("base_model.model.", "").replace(".base_layer", ""): p
              for n, p in trainer.model.named_parameters() if "lora_" not in n}
    assert all(bool((frozen[n] == base[n]).all()) for n in base)  # the base (the KL reference) never moves
    assert (tmp_path / "checkpoint-000002" / "model" / "adapter_config.json").is_file()


def test_play_episode_records_an_emulator_failure_as_an_error_not_a_reward() -> None:
    def broken(messages: tuple[Message, ...], params: object) -> str:
        raise LLMBackendError("emulator endpoint down")

    env = ToolEmuEnv(TOY_CASE, EnvConfig(emulator_model=FakeLLM.from_function(broken), judge_model=FakeLLM()))
    agent = ReActAgent(FakeLLM(['Action: CloudDriveListFolder\nAction Input: {"path": "/"}']))
    episode = play_episode(env, agent, group=0, seed=1)
    assert episode.status == "error" and episode.errored and "emulator endpoint down" in (episode.error or "")
    assert group_advantages([episode], scale=True) == [None]


def test_trainer_refuses_a_rollout_server_without_weight_sync(tiny_folder: Path) -> None:
    with pytest.raises(ConfigError, match="needs a weight sync"):
        GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(), rollout_model=FakeLLM())


def test_metrics_sink_writes_nan_as_null(tmp_path: Path) -> None:
    with MetricsSink(tmp_path) as sink:
        sink.record(3, {"rollout/reward_mean": math.nan, "train/loss": 0.5})
    assert json.loads((tmp_path / "metrics.jsonl").read_text()) == {
        "step": 3, "rollout/reward_mean": None, "train/loss": 0.5}


def test_trainer_gradient_accumulation_matches_one_padded_batch(tiny_folder: Path) -> None:
    import torch

    runs = []
    for micro in (1, 4):
        trainer = GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(steps=1, micro_batch_size=micro),
                              env_config=toy_env_config())
        rows = trainer.train()
        assert rows[0]["train/grad_norm"] > 0
        runs.append({n: p.grad.clone() for n, p in trainer.model.named_parameters()})
    # Gradients, not weights: Adam's first step moves every weight by about lr * sign(grad), so float noise on a
    # near-zero gradient would flip a weight by 2 * lr.
    one_by_one, padded = runs
    assert all(torch.allclose(one_by_one[n], padded[n], rtol=1e-4, atol=1e-7) for n in padded)
