"""``toolemu train guard``: PPO trains a guard over proposed actions on a suite, saves it, and compares guarded
with unguarded episodes in bench metrics."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.agents import ReActAgent
from toolemu.bench import ToolEmuSuiteEnv, select_cases
from toolemu.cli.options import training_model_options
from toolemu.cli.session import build_session
from toolemu.cli.terminal import echo
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import check_output_path
from toolemu.training.guard import (
    AgentProposer,
    Embedder,
    GuardConfig,
    GuardEnv,
    GuardTrainConfig,
    HashingEmbedder,
    Proposer,
    ReferenceProposer,
    SavedGuard,
    TransformersEmbedder,
    compare_guard,
    render_comparison,
    save_guard,
    sb3_policy,
    sidecar_path,
    train_guard,
)


@click.command("guard")
@click.option("--suite", default="emulated", show_default=True, help="A suite name, or a folder/file of cases.")
@click.option("--case", "case_ids", multiple=True, help="Train on these case ids only (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many cases.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="New policy file (.zip); its description goes beside it (.guard.json).")
@click.option("--proposer", type=click.Choice(["reference", "agent"]), default="reference", show_default=True,
              help="Candidates from each case's reference runs, or K samples of the ReAct agent (--agent-model).")
@click.option("--agent-temperature", type=click.FloatRange(0.0, 2.0), default=1.0, show_default=True,
              help="Sampling temperature of the proposal agent (0 gives K equal candidates).")
@click.option("--k", type=click.IntRange(1, 32), default=4, show_default=True, help="Candidate slots.")
@click.option("--dim", type=click.IntRange(2, 65536), default=256, show_default=True, help="Hashing embedding size.")
@click.option("--encoder", type=click.Path(exists=True, file_okay=False), default=None,
              help="A local transformers model folder to embed with instead of hashing.")
@click.option("--timesteps", type=click.IntRange(min=1), default=GuardTrainConfig().timesteps, show_default=True)
@click.option("--masked", is_flag=True, help="Train sb3-contrib's MaskablePPO on the action masks.")
@click.option("--eval-trials", type=click.IntRange(1, 1000), default=5, show_default=True,
              help="Evaluation episodes per case, guarded and unguarded each.")
@training_model_options
def guard_command(suite: str, case_ids: tuple[str, ...], limit: int | None, out: Path, proposer: str,
                  agent_temperature: float, k: int, dim: int, encoder: str | None, timesteps: int, masked: bool,
                  eval_trials: int, **opts: object) -> None:
    """Train a guard policy with PPO, save it, and report guarded vs unguarded bench metrics."""
    if out.suffix != ".zip":
        raise ConfigError(f"--out {out}: a guard policy is saved as a .zip file; name it {out.name}.zip")
    check_output_path(out, new=True)  # before training: a finished run never fails on its output path
    check_output_path(sidecar_path(out), new=True)
    cases = select_cases(suite, case_ids, limit, real_toolkits=opts["real_toolkits"])  # type: ignore[arg-type]
    session = build_session(opts)
    embedder: Embedder = TransformersEmbedder(encoder) if encoder else HashingEmbedder(dim)

    def guard_env(raise_on_error: bool) -> GuardEnv:
        chosen: Proposer = ReferenceProposer()
        if proposer == "agent":
            chosen = AgentProposer(ReActAgent(session.agent_model, variant=session.variant,  # type: ignore[arg-type]
                                              temperature=agent_temperature))
        return GuardEnv(ToolEmuSuiteEnv(cases, session.env_config), chosen, embedder,
                        GuardConfig(k=k, raise_on_error=raise_on_error))

    seed = int(opts["seed"])  # type: ignore[call-overload]
    echo(f"training on {len(cases)} cases, {timesteps} steps, K={k} ({proposer} proposals)", err=True)
    model = train_guard(guard_env(True), GuardTrainConfig(timesteps=timesteps, masked=masked, seed=seed))
    save_guard(model, out, SavedGuard(guard=GuardConfig(k=k), embedder=encoder or "hashing", dim=embedder.dim,
                                      masked=masked))
    echo(f"policy saved to {out} ({sidecar_path(out).name} beside it)", err=True)
    comparison = compare_guard(guard_env(False), sb3_policy(model, masked=masked), [c.id for c in cases],
                               trials=eval_trials, seed=seed + 1)
    echo(render_comparison(comparison))
