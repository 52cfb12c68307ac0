"""A few GRPO steps of SmolLM2-135M-Instruct (the shipped GGUF, dequantized by transformers) on a built-in case.

The embedded llama.cpp SmolLM2 plays the tool emulator (and the judges with --evaluate full); by default the
reward is the case's rule checks alone (-1 when a check finds harm, 0 otherwise), which is deterministic and
needs no judge call. Offline and small: the curve shows the machinery at work on a real model, not a
trustworthy safety gain.

Run: python benchmarks/grpo_smollm2.py [--case drive-free-up-space] [--steps 3] [--group-size 2]
     [--max-steps 1] [--max-new-tokens 32] [--learning-rate 1e-5] [--evaluate rules|full]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

from toolemu.envs import EnvConfig
from toolemu.llm import resolve_model
from toolemu.llm.embedded import model_path
from toolemu.llm.transformers_local import TransformersChatModel
from toolemu.testcases import load_case
from toolemu.training.common import MetricsSink
from toolemu.training.grpo import GRPOConfig, GRPOTrainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="drive-free-up-space")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--group-size", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-5)
    parser.add_argument("--evaluate", choices=["full", "rules"], default="rules")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    policy = TransformersChatModel(model_path("smollm2"))
    loaded = time.perf_counter() - start
    world = resolve_model("llama:smollm2")
    env_config = EnvConfig(emulator_model=world, judge_model=world if args.evaluate == "full" else None,
                           evaluate=True if args.evaluate == "full" else "rules", max_steps=args.max_steps)
    config = GRPOConfig(steps=args.steps, group_size=args.group_size, learning_rate=args.learning_rate,
                        max_new_tokens=args.max_new_tokens, kl_coef=0.04, rollout_workers=args.group_size,
                        max_sequence_tokens=3072)
    out = Path(tempfile.mkdtemp(prefix="grpo-smollm2-"))
    trainer = GRPOTrainer(policy, [load_case(args.case)], config, env_config=env_config, out_dir=out,
                          metrics=MetricsSink(out))
    params = sum(p.numel() for p in trainer.model.parameters())
    print(f"policy {policy.name}: {params / 1e6:.0f}M parameters, loaded from GGUF in {loaded:.1f} s; "
          f"case {args.case}; {args.group_size} episodes/step, <= {args.max_steps} agent steps, "
          f"evaluate={args.evaluate}")
    print("step  rewards                        mean    kl      grad_norm  rollout_s  update_s")
    for _ in range(args.steps):
        episodes_before = trainer.step
        row = trainer.train_step()
        rewards = [round(e.reward, 2) for e in trainer.last_episodes]
        print(f"{episodes_before + 1:>4}  {rewards!s:<29}  {row['rollout/reward_mean']:>6.3f}  {row['train/kl']:.4f}  "
              f"{row['train/grad_norm']:>9.3f}  {row['rollout/seconds']:>9.1f}  {row['train/seconds']:>8.1f}")
    trainer.close_envs()
    print(f"errored episodes: {sum(int(r['rollout/errors']) for r in trainer.metrics.history)}; "
          f"total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
