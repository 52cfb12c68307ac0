"""ToolEmu envs under TRL's ``GRPOTrainer`` (``environment_factory``): the adapter, and two real optimisation steps
of a tiny random model."""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import pytest

from tests.fakes.toy import TOY_CASE, tiny_policy_folder, toy_env_config
from tests.prerequisites import needs
from toolemu.core.errors import ConfigError, LLMBackendError
from toolemu.core.types import Message
from toolemu.envs import EnvConfig
from toolemu.llm import FakeLLM
from toolemu.training.trl.env import ENDED, ToolEmuTRLEnv, toolemu_reward, trl_dataset, trl_environment_factory

pytestmark = needs(modules=("trl",), install="pip install -e '.[training]'")

TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")


def _reply(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def test_trl_env_plays_tools_then_scores_the_last_reply_as_the_final_answer() -> None:
    env = trl_environment_factory([TOY_CASE], toy_env_config())()
    first = env.reset(case="toy-tidy", prompt=[{"role": "user", "content": "Task:"}])
    assert "use_tool" in first and "Sort my cloud drive." in first and "CloudDriveListFolder" in first
    assert "NotFoundException" in env.use_tool("CloudDriveListFolder", {"path": "/"})
    assert toolemu_reward([_reply("tidy files")], [env]) == [1.0]
    env.reset(case="toy-tidy")
    assert toolemu_reward([_reply("delete files")], [env]) == [-1.0]  # the rule check overrides the judge


def test_trl_env_ends_at_the_step_budget_and_keeps_that_reward() -> None:
    env = ToolEmuTRLEnv({"toy-tidy": TOY_CASE}, toy_env_config())
    env.reset(case="toy-tidy")
    env.use_tool("CloudDriveListFolder", {"path": "/"})
    assert env.use_tool("CloudDriveListFolder", {"path": "/a"}).endswith(ENDED)  # max_steps 2
    assert env.use_tool("CloudDriveListFolder", {"path": "/b"}) == ENDED
    assert toolemu_reward([_reply("tidy")], [env]) == [0.0]  # truncated without an answer: Poor, safe


def test_trl_env_returns_none_for_an_errored_episode() -> None:
    def broken(messages: tuple[Message, ...], params: object) -> str:
        raise LLMBackendError("emulator endpoint down")

    env = ToolEmuTRLEnv({"toy-tidy": TOY_CASE}, EnvConfig(emulator_model=FakeLLM.from_function(broken),
                                                         judge_model=FakeLLM()))
    env.reset(case="toy-tidy")
    env.use_tool("CloudDriveListFolder", {"path": "/"})
    logged: list[tuple[str, float]] = []
    assert toolemu_reward([_reply("tidy")], [env], log_metric=lambda k, v: logged.append((k, v))) == [None]
    assert logged == [("toolemu/errors", 1.0)]


def test_trl_env_rejects_an_unknown_case() -> None:
    env = ToolEmuTRLEnv({"toy-tidy": TOY_CASE}, toy_env_config())
    with pytest.raises(ConfigError, match="names case `nope`, which is not among the 1 cases"):
        env.reset(case="nope")


def test_trl_grpo_trainer_runs_two_steps_on_the_env(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    # TRL parses tool calls for the chat templates it knows; this one is Qwen2.5's, as TRL ships it.
    template = resources.files("trl").joinpath("chat_templates", "qwen2_5.jinja").read_text(encoding="utf-8")
    folder = tiny_policy_folder(tmp_path / "model", extra_tokens=TOOL_TOKENS, chat_template=template)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    args = GRPOConfig(output_dir=str(tmp_path / "trl"), max_steps=2, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=12, learning_rate=1e-2, logging_steps=1, report_to="none", use_cpu=True,
                      save_strategy="no", seed=1, dataloader_num_workers=0)
    trainer = GRPOTrainer(model=model, reward_funcs=[toolemu_reward], args=args,
                          train_dataset=trl_dataset([TOY_CASE], repeats=8), processing_class=tokenizer,
                          environment_factory=trl_environment_factory([TOY_CASE], toy_env_config()))
    trainer.train()
    logs = [row for row in trainer.state.log_history if "rewards/toolemu_reward/mean" in row]
    print("TRL two-step log:", [{k: round(v, 4) for k, v in row.items() if isinstance(v, float)} for row in logs])
    assert trainer.state.global_step == 2 and len(logs) == 2
    assert all(not math.isnan(row["rewards/toolemu_reward/mean"]) for row in logs)
    assert any(not torch.equal(p, before[n]) for n, p in model.named_parameters())
