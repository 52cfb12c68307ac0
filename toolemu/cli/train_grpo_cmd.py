"""``toolemu train grpo``: GRPO fine-tuning of a local transformers model acting through ReAct on a suite."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from toolemu.bench.suite import select_cases
from toolemu.cli.terminal import echo
from toolemu.core.errors import ConfigError
from toolemu.core.limits import MAX_STEPS
from toolemu.envs import EnvConfig
from toolemu.llm import ChatModel, OpenAICompatModel, describe_model, resolve_model
from toolemu.llm.transformers_local import TransformersChatModel
from toolemu.rewards.evaluation import EvaluationConfig
from toolemu.rewards.mode import EvaluateMode, parse_evaluate_mode
from toolemu.rewards.scorer import judge_needed
from toolemu.training.common import MetricsSink
from toolemu.training.grpo import GRPOConfig, GRPOTrainer, LoraAdapterSync, LoraSettings


def _env_config(opts: dict[str, object]) -> EnvConfig:
    base_url, api_key = opts["base_url"], opts["api_key"]

    def resolve(spec: object) -> ChatModel:
        return resolve_model(spec, base_url=base_url, api_key=api_key)  # type: ignore[arg-type]

    mode = parse_evaluate_mode(opts["evaluate"])
    evaluation = EvaluationConfig(scorers=tuple(opts.get("scorers") or ()))  # type: ignore[arg-type]
    emulator = resolve(opts["emulator_model"])
    judge = resolve(opts["judge_model"]) if judge_needed(mode, evaluation) else None
    for role, model in (("emulator", emulator), ("judges", judge)):
        echo(f"{role:>9}: {describe_model(model) if model else 'none (rule checks only)'}", err=True)
    return EnvConfig(emulator_model=emulator, judge_model=judge, npc_model=emulator, evaluate=mode,
                     evaluation=evaluation, max_steps=opts["max_steps"])  # type: ignore[arg-type]


@click.command("grpo")
@click.option("--model", "model_path", required=True, type=click.Path(exists=True, path_type=Path),
              help="Local transformers model folder or .gguf file to fine-tune (updated copies go to --out).")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for checkpoints and metrics.jsonl.")
@click.option("--suite", default="emulated", show_default=True, help="builtin, emulated, real, or a folder/file.")
@click.option("--case", "case_ids", multiple=True, help="Train on these case ids or files only (repeatable).")
@click.option("--steps", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--group-size", type=click.IntRange(min=2), default=4, show_default=True)
@click.option("--cases-per-step", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--learning-rate", type=click.FloatRange(min=0, min_open=True), default=1e-5, show_default=True)
@click.option("--kl-coef", type=click.FloatRange(min=0), default=0.04, show_default=True)
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--temperature", type=click.FloatRange(min=0, min_open=True), default=1.0, show_default=True)
@click.option("--micro-batch-size", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--lora-r", type=click.IntRange(min=0), default=0, show_default=True, help="LoRA rank (0: full).")
@click.option("--save-every", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--resume", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Continue from this checkpoint folder.")
@click.option("--device", default="cpu", show_default=True, help="torch device of the policy (cpu, cuda...).")
@click.option("--dtype", default="float32", show_default=True, help="float32, bfloat16 or float16.")
@click.option("--rollout-base-url", default=None, help="Generate rollouts on this vLLM server (needs --lora-r).")
@click.option("--rollout-model", default=None, help="The base model's name on that server.")
@click.option("--agent-variant", type=click.Choice(["plain", "safety", "helpful_safe"]), default="plain")
@click.option("--emulator-model", default=None, help="Tool emulator model spec.")
@click.option("--judge-model", default=None, help="Judge model spec.")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint for the emulator and judges.")
@click.option("--api-key", default=None, help="API key for that endpoint.")
@click.option("--evaluate", type=click.Choice([m.value for m in EvaluateMode]), default="auto", show_default=True,
              help="full: rule checks and judges; rules: rule checks alone; auto: rules for cases with checks, "
                   "judges for the others (the training preset).")
@click.option("--max-steps", type=click.IntRange(1, MAX_STEPS), default=None, help="Override the step budget.")
@click.option("--seed", type=int, default=0, show_default=True)
def grpo_command(model_path: Path, out: Path, suite: str, case_ids: tuple[str, ...], resume: Path | None,
                 device: str, dtype: str, rollout_base_url: str | None, rollout_model: str | None,
                 **opts: object) -> None:
    """Fine-tune a local model with GRPO on a suite: G episodes per case, group-normalised terminal rewards."""
    if (rollout_base_url is None) != (rollout_model is None):
        raise ConfigError("--rollout-base-url and --rollout-model go together (the server and the base model name)")
    lora_r = int(opts.pop("lora_r"))  # type: ignore[call-overload]
    lora = LoraSettings(r=lora_r, alpha=2 * lora_r) if lora_r else None
    fields = ("steps", "group_size", "cases_per_step", "learning_rate", "kl_coef", "max_new_tokens", "temperature",
              "micro_batch_size", "save_every", "seed")
    config = GRPOConfig.model_validate({k: opts.pop(k) for k in fields} | {"variant": opts.pop("agent_variant"),
                                                                          "lora": lora})
    cases = select_cases(suite, case_ids)
    env_config = _env_config(opts)
    policy = TransformersChatModel(model_path, device=device, dtype=dtype)
    echo(f"   policy: {policy.name} on {device}; {len(cases)} cases -> {out}", err=True)
    server = sync = None
    if rollout_base_url is not None:
        server = OpenAICompatModel(str(rollout_model), base_url=rollout_base_url, api_key=opts["api_key"])  # type: ignore[arg-type]
        sync = LoraAdapterSync(rollout_base_url, out / "served-adapters", api_key=opts["api_key"])  # type: ignore[arg-type]
    with MetricsSink(out, stream=sys.stdout) as metrics:
        trainer = GRPOTrainer(policy, cases, config, env_config=env_config, out_dir=out, rollout_model=server,
                              weight_sync=sync, metrics=metrics)
        if resume is not None:
            trainer.resume(resume)
        trainer.train()
    echo(f"wrote {out / f'checkpoint-{trainer.step:06d}'}", err=True)
