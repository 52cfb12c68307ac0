"""GRPO learning evidence on a tiny random model: the toy case rewards a final answer that says ``tidy``.

Prints the mean reward as training goes and the log-probability that the first reply opens with the rewarded
"Final Answer: tidy" or the penalised "Final Answer: delete"; then checks that the checkpoint taken halfway
reloads and resumes to exactly the weights of the uninterrupted run, and that the last one loads as a model.

Run: python benchmarks/grpo_toy.py [--steps 40] [--group-size 8] [--learning-rate 0.01] [--kl-coef 0.01] [--seed 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the toy lives with the tests (tests/fakes/toy.py)

from tests.fakes.toy import TOY_CASE, tiny_policy_folder, toy_env_config
from toolemu.agents import system_prompt
from toolemu.core.types import Message
from toolemu.envs import ToolEmuEnv
from toolemu.llm.transformers_local import TransformersChatModel
from toolemu.training.common import MetricsSink
from toolemu.training.grpo import GRPOConfig, GRPOTrainer, build_sequence


def opening_logprob(trainer: GRPOTrainer, first_observation: str, opening: str) -> float:
    """The policy's log-probability that its first reply starts with ``opening`` (summed over its tokens)."""
    messages = [Message(role="system", content=system_prompt(trainer.config.variant)),
                Message(role="user", content=first_observation), Message(role="assistant", content=opening)]
    seq = build_sequence(trainer.policy.tokenizer, messages)
    n = len(trainer.policy.tokenizer(opening, add_special_tokens=False)["input_ids"])
    start = seq.mask.index(True)
    ids = torch.tensor([seq.ids[: start + n]])
    with torch.no_grad():
        logp = torch.log_softmax(trainer.model(input_ids=ids).logits[0, :-1].float(), dim=-1)
    picked = logp.gather(-1, ids[0, 1:].unsqueeze(-1)).squeeze(-1)
    return float(picked[start - 1 :].sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--kl-coef", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    work = Path(tempfile.mkdtemp(prefix="grpo-toy-"))
    folder = tiny_policy_folder(work / "model")
    config = GRPOConfig(steps=args.steps, group_size=args.group_size, learning_rate=args.learning_rate,
                        max_new_tokens=8, kl_coef=args.kl_coef, rollout_workers=4, seed=args.seed,
                        save_every=args.steps // 2)
    env = ToolEmuEnv(TOY_CASE, toy_env_config())
    first, _ = env.reset(seed=0)
    env.close()

    def openings() -> str:
        return (f"{opening_logprob(trainer, first, 'Final Answer: tidy'):>20.3f}  "
                f"{opening_logprob(trainer, first, 'Final Answer: delete'):>22.3f}")


    start = time.perf_counter()
    trainer = GRPOTrainer(TransformersChatModel(folder), [TOY_CASE], config, env_config=toy_env_config(),
                          out_dir=work / "run", metrics=MetricsSink(work / "run"))
    print(f"tiny model: {sum(p.numel() for p in trainer.model.parameters()):,} parameters; "
          f"{args.steps} steps x {args.group_size} episodes of {TOY_CASE.id}")
    print("step  reward_mean(last 5)  logp('Final Answer: tidy' first)  logp('Final Answer: delete' first)")
    print(f"{0:>4}  {'':>19}  {openings()}")
    rewards = []
    while trainer.step < config.steps:
        row = trainer.train_step()
        rewards.append(row["rollout/reward_mean"])
        if trainer.step == config.save_every:
            trainer.save()
        if trainer.step % 5 == 0:
            print(f"{trainer.step:>4}  {statistics.mean(rewards[-5:]):>19.3f}  {openings()}")
    trainer.save()
    trainer.close_envs()
    seconds = time.perf_counter() - start
    fifth = max(1, len(rewards) // 5)
    print(f"mean reward: first {fifth} steps {statistics.mean(rewards[:fifth]):.3f}, "
          f"last {fifth} steps {statistics.mean(rewards[-fifth:]):.3f} (n={fifth * args.group_size} episodes each)")
    print(f"training time: {seconds:.1f} s ({seconds / args.steps:.2f} s/step)")

    half = work / "run" / f"checkpoint-{config.save_every:06d}"
    resumed = GRPOTrainer(TransformersChatModel(folder), [TOY_CASE], config, env_config=toy_env_config(),
                          out_dir=work / "resumed", metrics=MetricsSink(work / "resumed"))
    resumed.resume(half)
    print(f"resumed from {half.name} at step {resumed.step}")
    resumed.train()
    ours = dict(resumed.model.named_parameters())
    same = all(torch.equal(p, ours[n]) for n, p in trainer.model.named_parameters())
    biggest = max(float((p - ours[n]).detach().abs().max()) for n, p in trainer.model.named_parameters())
    print(f"resumed run matches the uninterrupted run: {same} (max weight difference {biggest:.2e})")
    reloaded = TransformersChatModel(work / "run" / f"checkpoint-{config.steps:06d}" / "model")
    loaded = dict(reloaded.model.named_parameters())
    print("final checkpoint reloads as a model folder with the trained weights: "
          f"{all(torch.equal(p, loaded[n]) for n, p in trainer.model.named_parameters())}")


if __name__ == "__main__":
    main()
