"""Builds models, the agent factory and the env config from CLI options, and says which backends are in use."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from toolemu.agents import Agent, ReActAgent
from toolemu.bench import config_hash
from toolemu.bench.rollout import AgentFactory
from toolemu.bench.run_info import RunInfo
from toolemu.cli.terminal import echo
from toolemu.envs import EnvConfig
from toolemu.envs.tool_use_env import ENV_VERSION
from toolemu.llm import ChatModel, describe_model, resolve_model
from toolemu.llm.openai_compat import DEFAULT_MAX_CONNECTIONS
from toolemu.rewards.evaluation import EVALUATION_VERSION, EvaluationConfig, build_judges
from toolemu.toolkits.emulated import EMULATOR_VERSION


class Session(NamedTuple):
    """What a run needs, resolved once."""

    agent_model: ChatModel
    variant: str
    env_config: EnvConfig
    run_hash: str
    info: RunInfo
    """What ``run_hash`` stands for, saved beside the results file for reports."""

    def make_agent(self) -> Agent:
        """A fresh agent for one episode."""
        return ReActAgent(self.agent_model, variant=self.variant)  # type: ignore[arg-type]


def build_session(opts: dict[str, object], *, extra: dict[str, object] | None = None, concurrency: int = 1,
                  quiet: bool = False) -> Session:
    """Resolves the models named by the CLI options and prints which backend each role uses.

    Args:
        concurrency: Episodes in flight at once: each remote model's connection pool holds at least that many.
        quiet: Print nothing (a Ray worker resolving the models again).
    """
    base_url, api_key = opts["base_url"], opts["api_key"]
    cache = Path(str(opts["cache_dir"])) if opts.get("cache_dir") else None
    pool = max(concurrency, DEFAULT_MAX_CONNECTIONS)

    def resolve(spec: object) -> ChatModel:
        return resolve_model(spec, base_url=base_url, api_key=api_key, cache_dir=cache,  # type: ignore[arg-type]
                             max_connections=pool)

    rules_only = opts.get("evaluate") == "rules"
    agent = resolve(opts["agent_model"])
    emulator = resolve(opts["emulator_model"])
    judge = None if rules_only else resolve(opts["judge_model"])
    npc = resolve(opts["npc_model"]) if opts.get("npc_model") else emulator  # one default model, loaded once
    for role, model in (("agent", agent), ("emulator", emulator), ("npcs", npc), ("judges", judge)):
        shown = describe_model(model) if model is not None else "none (rule checks only)"
        if not quiet:
            echo(f"{role:>9}: {shown}", err=True)
    env_config = EnvConfig(
        emulator_model=emulator,
        judge_model=judge,
        npc_model=npc,
        evaluate="rules" if rules_only else "auto" if opts.get("evaluate") == "auto" else True,
        emulator_mode=opts["emulator_mode"],  # type: ignore[arg-type]
        evaluation=EvaluationConfig(safety_scales=(opts["safety_scale"],)),  # type: ignore[arg-type]
        real_toolkits=tuple(opts["real_toolkits"]),  # type: ignore[arg-type]
        max_steps=opts["max_steps"],  # type: ignore[arg-type]
    )
    versions = {
        "env": ENV_VERSION,
        "emulator": EMULATOR_VERSION,
        "evaluation": EVALUATION_VERSION,
        "agent": ReActAgent(agent, variant=opts["agent_variant"]).version,  # type: ignore[arg-type]
    }
    if judge is not None:
        judges = build_judges(env_config.evaluation, judge)
        parts = [*judges.safety, judges.helpfulness, *([judges.completion] if judges.completion else [])]
        versions |= {j.name: j.version for j in parts}
        versions[judges.checks.name] = judges.checks.version
    description = {
        "versions": versions,
        "agent": agent.name,
        "variant": opts["agent_variant"],
        "emulator": emulator.name,
        "judge": judge.name if judge is not None else None,
        "evaluate": opts.get("evaluate", "full"),
        "emulator_mode": opts["emulator_mode"],
        "safety_scale": opts["safety_scale"],
        "real_toolkits": sorted(opts["real_toolkits"]),  # type: ignore[call-overload]
        "max_steps": opts["max_steps"],
        **({"npc": npc.name} if opts.get("npc_model") else {}),  # absent by default: earlier hashes still hold
        **(extra or {}),
    }
    info = RunInfo(agent=agent.name, variant=str(opts["agent_variant"]),
                   judge=judge.name if judge is not None else None,
                   description=json.loads(json.dumps(description, default=str)))
    return Session(agent, str(opts["agent_variant"]), env_config, config_hash(description), info)


@dataclass(frozen=True, slots=True)
class SessionRecipe:
    """The CLI options as a ``SuiteSetup``: a Ray worker or a worker process builds the same session from them,
    quietly, with connections for ``concurrency`` calls at once.

    Examples:
        >>> SessionRecipe.of({"seed": 0, "real_toolkits": ("Terminal",)}).opts
        (('real_toolkits', ('Terminal',)), ('seed', 0))
    """

    opts: tuple[tuple[str, object], ...]
    """The options, sorted by name (hashable, so a worker builds each recipe once)."""
    concurrency: int = 1
    """Episodes the worker plays at once."""

    @classmethod
    def of(cls, opts: dict[str, object], *, concurrency: int = 1) -> SessionRecipe:
        """Freezes CLI options (lists become tuples)."""
        return cls(tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in opts.items())), concurrency)

    def __call__(self) -> tuple[AgentFactory, EnvConfig]:
        """Resolves the models in this process and returns the agent factory and env config."""
        session = build_session(dict(self.opts), quiet=True, concurrency=self.concurrency)
        return session.make_agent, session.env_config
