"""``RunConfig``: what a bench run runs (agent, models, evaluate mode, scorers, executor, trials), typed, with the
run's config hash computed here, so a Python user reproduces what ``toolemu bench`` records; the CLI only parses
its options into one.

``RunConfig.resolve()`` builds the models once and returns a ``ResolvedRun``: the env config, the agent
factory, the config hash and the run description saved beside the results (``RunInfo``). The hash covers what
shapes an episode or its scores (models by name, agent and prompt version, env, emulator and scorer versions,
evaluate mode, emulator mode, real toolkits, step budget, the defense with its version and model), never where
or how fast it runs (endpoint, key, cache, executor, concurrency, trials, seed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import Field, ValidationError

from toolemu.agents import Agent, make_agent
from toolemu.agents.defenses import NO_DEFENSE, DefenseMaker, DefenseSetup, defend, defense_needs_model, prepare_defense
from toolemu.agents.registry import agent_variants
from toolemu.bench.mcp.tools import MCP_SERVER_VERSION
from toolemu.bench.process_executor import ProcessOptions, default_workers
from toolemu.bench.ray_options import RayOptions
from toolemu.bench.record import EpisodeRecord
from toolemu.bench.rollout import AgentFactory, EpisodeDriver
from toolemu.bench.run_info import RunInfo, save_run_info
from toolemu.bench.runner import config_hash, run_suite
from toolemu.core.errors import ConfigError
from toolemu.core.limits import MAX_CONCURRENCY, MAX_STEPS, MAX_TRIALS
from toolemu.core.types import Frozen
from toolemu.envs import EnvConfig
from toolemu.envs.tool_use_env import ENV_VERSION
from toolemu.llm import ChatModel, describe_model, resolve_model
from toolemu.llm.openai_compat import DEFAULT_MAX_CONNECTIONS
from toolemu.rewards.evaluation import EVALUATION_VERSION, EvaluationConfig
from toolemu.rewards.mode import EvaluateField, EvaluateMode, EvaluationScope, parse_evaluate_mode
from toolemu.rewards.scorer import build_scorers, judge_needed
from toolemu.rewards.verdict import SafetyScale
from toolemu.testcases import Case
from toolemu.toolkits.emulated import EMULATOR_VERSION, EmulatorMode

Executor = Literal["threads", "processes", "ray"]
"""Where episodes run: threads of this process, worker processes on this machine, or Ray tasks."""

DEFAULT_AGENT = "react"
DEFAULT_AGENT_TIMEOUT_S = 900.0
"""Wall-clock bound on one episode of an external agent command (``RunConfig.agent_timeout_s``)."""


class RunConfig(Frozen):
    """A bench run: what plays, what scores, where it runs. Model fields are model specs (``openai:gpt-4o-mini``,
    ``llama:embedded``...); ``None`` is the default backend (OpenAI-compatible when a key or base URL is set,
    else the embedded local model)."""

    agent: str = DEFAULT_AGENT
    """The agent, by registered name (``toolemu.agents.AGENTS``)."""
    agent_model: str | None = None
    """The agent's model."""
    agent_variant: str | None = None
    """The agent's prompt variant (``plain``, ``safety``, ``helpful_safe`` for ``react``); ``None``: its first."""
    emulator_model: str | None = None
    """The tool emulator's model."""
    judge_model: str | None = None
    """The judges' model (resolved only when a scorer of the evaluate mode calls it)."""
    npc_model: str | None = None
    """The NPC coworkers' and simulated user's model; ``None``: the emulator's."""
    base_url: str | None = None
    """OpenAI-compatible endpoint for the model specs (not part of the hash)."""
    api_key: str | None = Field(default=None, repr=False)
    """Its API key (not part of the hash, never shown)."""
    cache_dir: Path | None = None
    """Cache model responses on disk here (not part of the hash)."""
    emulator_mode: EmulatorMode = "standard"
    """``standard`` or ``adversarial`` emulation."""
    safety_scale: SafetyScale = "toolemu"
    """The safety judge's scale."""
    scorers: tuple[str, ...] = ()
    """Further registered scorers to run (``register_scorer``)."""
    evaluate: EvaluateField = EvaluateMode.FULL
    """What scores the episodes (``EvaluateMode``)."""
    real_toolkits: tuple[str, ...] = ()
    """Toolkits run on the real sandbox even where an emulated spec exists."""
    max_steps: int | None = Field(default=None, ge=1, le=MAX_STEPS)
    """Overrides each case's step budget."""
    seed: int = 0
    """Seed of the run's episodes (each trial's seed derives from it; not part of the hash)."""
    trials: int = Field(default=1, ge=1, le=MAX_TRIALS)
    """Episodes per case."""
    concurrency: int = Field(default=1, ge=1, le=MAX_CONCURRENCY)
    """Episodes in flight."""
    executor: Executor = "threads"
    """Where episodes run."""
    workers: int | None = Field(default=None, ge=1, le=256)
    """Worker processes for the ``processes`` executor (default: the CPUs this process may use)."""
    ray_address: str | None = None
    """Ray cluster for the ``ray`` executor (default ``$RAY_ADDRESS``, else a local instance)."""
    ray_cpus_per_episode: float = Field(default=1.0, ge=0.01)
    """CPUs Ray reserves per episode task."""
    agent_mcp_command: str | None = Field(default=None, min_length=1)
    """An external agent instead of ``agent``: a shell command that speaks MCP to the episode's server
    (``toolemu.bench.mcp.agent_command``; part of the hash)."""
    agent_timeout_s: float = Field(default=DEFAULT_AGENT_TIMEOUT_S, gt=0)
    """Wall-clock bound on one episode of ``agent_mcp_command`` (not part of the hash)."""
    defense: str | None = None
    """The defense the agent runs behind, by registered name (``toolemu.agents.defenses.DEFENSES``); ``None`` (or
    ``none``): no defense."""
    defense_model: str | None = None
    """The defense's model (tool filter, detector); ``None``: the agent's model."""
    guard_policy: Path | None = None
    """The trained guard policy (``.zip``) the ``guard`` defense loads; its content is part of the hash."""

    @classmethod
    def of(cls, **fields: object) -> RunConfig:
        """A run config from field values (what the CLI parses its options into).

        Raises:
            ConfigError: a value the config refuses, in one line naming the field.
        """
        try:
            return cls.model_validate(fields)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            msg = str(first["msg"]).removeprefix("Value error, ")
            raise ConfigError(f"RunConfig.{where}: {msg} (got {first.get('input')!r:.60})") from None


    def check_executor(self) -> None:
        """Checks that the executor options go together.

        Raises:
            ConfigError: ``workers`` without the ``processes`` executor, or Ray options without ``ray``.
        """
        if self.executor != "ray" and (self.ray_address is not None or self.ray_cpus_per_episode != 1.0):
            raise ConfigError("--ray-address and --ray-cpus-per-episode need --executor ray (RunConfig.ray_address, "
                              "ray_cpus_per_episode need executor='ray')")
        if self.executor != "processes" and self.workers is not None:
            raise ConfigError("--workers needs --executor processes (RunConfig.workers needs executor='processes')")

    @property
    def mode(self) -> EvaluateMode:
        """The evaluate mode."""
        return parse_evaluate_mode(self.evaluate)

    def evaluation(self) -> EvaluationConfig:
        """The evaluation config of the run's envs."""
        return EvaluationConfig(safety_scales=(self.safety_scale,), scorers=self.scorers)

    def resolve(self, *, concurrency: int | None = None) -> ResolvedRun:
        """Builds the run's models (once), its env config, agent factory, config hash and description.

        Args:
            concurrency: Calls each remote model must serve at once (default: ``concurrency``); sizes connection
                pools, no part of the hash.

        Raises:
            ConfigError: a model spec, agent, variant or scorer that cannot be resolved.
        """
        if self.agent_mcp_command is not None:
            return self._resolve(concurrency, external=f"mcp-command:{self.agent_mcp_command}")
        return self._resolve(concurrency, external=None)

    def resolve_served(self, client: str) -> ResolvedRun:
        """Resolves a run whose agent is an MCP client outside this process (``toolemu mcp``): no agent model;
        ``client`` names the agent in the config hash.

        Raises:
            ConfigError: agent options given, or a model spec or scorer that cannot be resolved.
        """
        return self._resolve(None, external=f"mcp-client:{client}")

    def _resolve(self, concurrency: int | None, *, external: str | None) -> ResolvedRun:
        if self.agent_mcp_command is None and self.agent_timeout_s != DEFAULT_AGENT_TIMEOUT_S:
            raise ConfigError("--agent-timeout needs --agent-mcp-command (RunConfig.agent_timeout_s bounds an "
                              "external agent command)")
        if external is not None and (self.agent != DEFAULT_AGENT or self.agent_model or self.agent_variant):
            raise ConfigError("an MCP agent is its own model: drop --agent, --agent-model and --agent-variant "
                              "(RunConfig.agent, agent_model, agent_variant)")
        variant = self.agent_variant if self.agent_variant is not None else agent_variants(self.agent)[0]
        pool = max(concurrency or self.concurrency, DEFAULT_MAX_CONNECTIONS)

        def resolve(spec: str | None) -> ChatModel:
            return resolve_model(spec, base_url=self.base_url, api_key=self.api_key, cache_dir=self.cache_dir,
                                 max_connections=pool)

        evaluation = self.evaluation()
        agent = resolve(self.agent_model) if external is None else None
        # Fails here on a bad agent or variant, before any episode.
        version = getattr(make_agent(self.agent, agent, variant), "version", self.agent) if agent is not None else ""
        defense = self.defense if self.defense != NO_DEFENSE else None
        if defense is not None and external is not None:
            raise ConfigError(f"--defense {defense} wraps an agent in this process; an MCP agent outside it "
                              "(--agent-mcp-command, toolemu mcp) cannot run behind one")
        maker: DefenseMaker | None = None
        defended: dict[str, object] | None = None
        if defense is not None and agent is not None:  # fails here too: an unknown defense, a policy that won't load
            model = None
            if defense_needs_model(defense):
                model = resolve(self.defense_model) if self.defense_model else agent
            maker = prepare_defense(defense, DefenseSetup(model=model, policy=self.guard_policy,
                                                          max_steps=self.max_steps))
            defended = {"name": defense, "version": maker().version, "model": model.name if model else None}
        emulator = resolve(self.emulator_model)
        judge = resolve(self.judge_model) if judge_needed(self.mode, evaluation) else None
        npc = resolve(self.npc_model) if self.npc_model else emulator  # one default model, loaded once
        env_config = EnvConfig(emulator_model=emulator, judge_model=judge, npc_model=npc, evaluate=self.mode,
                               emulator_mode=self.emulator_mode, evaluation=evaluation,
                               real_toolkits=self.real_toolkits, max_steps=self.max_steps)
        description = self.describe(agent=agent if agent is not None else str(external), agent_version=version,
                                    emulator=emulator, judge=judge, npc=npc if self.npc_model else None,
                                    defense=defended)
        info = RunInfo(agent=agent.name if agent is not None else str(external), variant=variant,
                       judge=judge.name if judge is not None else None,
                       description=json.loads(json.dumps(description, default=str)), defense=defense)
        models = (("emulator", emulator), ("npcs", npc), ("judges", judge))
        shown = [(role, describe_model(m) if m is not None else "none (rule checks only)") for role, m in models]
        outside = f"an MCP agent outside this process ({external})"
        return ResolvedRun(agent_model=agent, agent=self.agent, variant=variant, env_config=env_config,
                           run_hash=config_hash(description), info=info,
                           backends=(("agent", describe_model(agent) if agent is not None else outside), *shown),
                           agent_command=self.agent_mcp_command, agent_timeout_s=self.agent_timeout_s,
                           defense=defense, defense_maker=maker)

    def describe(self, *, agent: ChatModel | str, agent_version: str, emulator: ChatModel, judge: ChatModel | None,
                 npc: ChatModel | None, defense: dict[str, object] | None = None) -> dict[str, object]:
        """What the config hash is taken of, from the resolved models (``npc`` only when named apart; ``agent``
        as a string: an MCP agent outside this process, ``mcp-command:<command>`` or ``mcp-client:<name>``;
        ``defense``: its name, version and model, when there is one)."""
        mode = self.mode
        versions = {"env": ENV_VERSION, "emulator": EMULATOR_VERSION, "evaluation": EVALUATION_VERSION,
                    "agent": agent_version}
        if isinstance(agent, str):
            versions["agent"] = MCP_SERVER_VERSION
        if mode is not EvaluateMode.OFF:
            scope: EvaluationScope = "full" if judge is not None else "rules"
            versions |= build_scorers(self.evaluation(), judge, scope).versions()
        variant = self.agent_variant if self.agent_variant is not None else agent_variants(self.agent)[0]
        # Keys added since the first hashed runs appear only when set, so earlier results files still resume.
        return {
            "versions": versions,
            "agent": agent if isinstance(agent, str) else agent.name,
            "variant": None if isinstance(agent, str) else variant,
            "emulator": emulator.name,
            "judge": judge.name if judge is not None else None,
            "evaluate": mode.value,
            "emulator_mode": self.emulator_mode,
            "safety_scale": self.safety_scale,
            "real_toolkits": sorted(self.real_toolkits),
            "max_steps": self.max_steps,
            **({"npc": npc.name} if npc is not None else {}),
            **({"agent_kind": self.agent} if self.agent != DEFAULT_AGENT else {}),
            **({"scorers": list(self.scorers)} if self.scorers else {}),
            **({"defense": defense} if defense is not None else {}),
        }

    def executors(self) -> tuple[RayOptions | None, ProcessOptions | None, str]:
        """The ``run_suite`` executor options of this run and a one-line description of where episodes run.

        Raises:
            ConfigError: executor options that do not go together (``check_executor``).
        """
        self.check_executor()
        if self.executor == "ray":
            ray = RayOptions(setup=RunSetup(self), address=self.ray_address, cpus_per_episode=self.ray_cpus_per_episode)
            return ray, None, "ray"
        if self.executor == "processes":
            n = min(self.workers or default_workers(), self.concurrency)
            processes = ProcessOptions(setup=RunSetup(self, concurrency=-(-self.concurrency // n)), workers=n)
            return None, processes, f"{n} worker processes"
        return None, None, "threads"


class ResolvedRun(NamedTuple):
    """A ``RunConfig`` with its models built."""

    agent_model: ChatModel | None
    """The agent's model (``None`` for an MCP agent outside this process)."""
    agent: str
    """The agent's registered name."""
    variant: str
    env_config: EnvConfig
    run_hash: str
    """The config hash records of this run carry."""
    info: RunInfo
    """What ``run_hash`` stands for, saved beside the results file for reports."""
    backends: tuple[tuple[str, str], ...]
    """(role, backend in words) of each model, for the CLI to show."""
    agent_command: str | None = None
    """The external MCP agent's command (``RunConfig.agent_mcp_command``)."""
    agent_timeout_s: float = DEFAULT_AGENT_TIMEOUT_S
    """Its wall-clock bound per episode."""
    defense: str | None = None
    """The defense's registered name, ``None`` for none."""
    defense_maker: DefenseMaker | None = None
    """Makes the defense of one episode."""

    def make_agent(self) -> Agent:
        """A fresh agent for one episode (behind a fresh defense, when the run has one).

        Raises:
            ConfigError: the run's agent is outside this process (``make_player`` plays it).
        """
        if self.agent_model is None:
            raise ConfigError("this run's agent is an MCP agent outside this process; it plays whole episodes "
                              "(ResolvedRun.make_player), not steps")
        agent = make_agent(self.agent, self.agent_model, self.variant)
        return defend(agent, self.defense_maker()) if self.defense_maker is not None else agent

    def make_player(self) -> Agent | EpisodeDriver:
        """What plays one episode: a fresh agent, or the external agent command's driver."""
        if self.agent_command is not None:
            from toolemu.bench.mcp.agent_command import McpCommandAgent  # needs the `interop` extra

            return McpCommandAgent(self.agent_command, timeout_s=self.agent_timeout_s)
        return self.make_agent()


@dataclass(frozen=True, slots=True)
class RunSetup:
    """A ``SuiteSetup``: a worker process or Ray worker resolves the run's models from the ``RunConfig`` itself,
    with connections for ``concurrency`` calls at once."""

    config: RunConfig
    concurrency: int = 1

    def __call__(self) -> tuple[AgentFactory, EnvConfig]:
        """Resolves the models in this process and returns the agent factory and env config."""
        run = self.config.resolve(concurrency=self.concurrency)
        factory: Callable[[], Agent | EpisodeDriver] = run.make_player
        return factory, run.env_config


def run_bench(config: RunConfig, cases: Sequence[Case], *, out: Path, retry_errors: bool = False,
              run: ResolvedRun | None = None, progress: bool = True) -> list[EpisodeRecord]:
    """Runs ``config`` over ``cases`` into the results file ``out`` (resuming it), with the run's description saved
    beside it (``<out>.configs.json``), on the configured executor.

    Args:
        config: The run.
        cases: The cases (``select_cases``).
        out: The append-only results file.
        retry_errors: Also re-run episodes whose latest record is an error.
        run: ``config`` already resolved (``config.resolve()``), to reuse its models.
        progress: Show a progress bar.

    Returns:
        Every record of this config for ``cases``.

    Raises:
        ConfigError: executor options that do not go together, ``out``'s folder missing, a model that cannot be
            resolved.
    """
    ray, processes, _ = config.executors()
    run = run or config.resolve()
    save_run_info(out, run.run_hash, run.info)
    return run_suite(cases, run.make_player, run.env_config, run_hash=run.run_hash, out=out, trials=config.trials,
                     concurrency=config.concurrency, seed=config.seed, progress=progress, retry_errors=retry_errors,
                     ray=ray, processes=processes, defense=run.defense)
