"""What ``toolemu serve``'s options describe: the cases to serve and the env config, its models built once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from toolemu.bench.run_config import RunConfig
from toolemu.bench.suite import select_cases
from toolemu.core.errors import ConfigError
from toolemu.envs import EnvConfig
from toolemu.llm import ChatModel, describe_model, resolve_model
from toolemu.llm.openai_compat import DEFAULT_MAX_CONNECTIONS
from toolemu.rewards.scorer import judge_needed
from toolemu.serving.environment import ServedCases, served_cases
from toolemu.testcases import load_case

_FIELDS = ("emulator_model", "judge_model", "npc_model", "base_url", "api_key", "emulator_mode", "safety_scale",
           "evaluate", "real_toolkits", "max_steps")


def env_config_of(config: RunConfig, *, connections: int = DEFAULT_MAX_CONNECTIONS,
                  ) -> tuple[EnvConfig, tuple[tuple[str, str], ...]]:
    """The env config of a ``RunConfig``'s env fields (its agent fields unused), each model built once and shared
    by every session; and which backend each role uses, in words.

    Raises:
        ConfigError: a model spec that cannot be resolved.
    """
    def resolve(spec: str | None) -> ChatModel:
        return resolve_model(spec, base_url=config.base_url, api_key=config.api_key, cache_dir=config.cache_dir,
                             max_connections=max(connections, DEFAULT_MAX_CONNECTIONS))

    evaluation = config.evaluation()
    emulator = resolve(config.emulator_model)
    judge = resolve(config.judge_model) if judge_needed(config.mode, evaluation) else None
    npc = resolve(config.npc_model) if config.npc_model else emulator
    env_config = EnvConfig(emulator_model=emulator, judge_model=judge, npc_model=npc, evaluate=config.mode,
                           emulator_mode=config.emulator_mode, evaluation=evaluation,
                           real_toolkits=config.real_toolkits, max_steps=config.max_steps)
    shown = (("emulator", describe_model(emulator)), ("npcs", describe_model(npc)),
             ("judges", describe_model(judge) if judge is not None else "none (rule checks only)"))
    return env_config, shown


def served_from_options(case_ids: Sequence[str], suite: str | None, opts: Mapping[str, object], *,
                        connections: int = DEFAULT_MAX_CONNECTIONS,
                        ) -> tuple[ServedCases, tuple[tuple[str, str], ...]]:
    """The cases and env config ``toolemu serve``'s options name.

    Args:
        case_ids: ``--case`` values: one serves ``ToolEmu-v0``; with ``suite``, they narrow the suite.
        suite: ``--suite``: serves ``ToolEmuSuite-v0``.
        opts: The model and env options, by ``RunConfig`` field name.

    Raises:
        ConfigError: neither a case nor a suite, several cases without a suite, or an option the config refuses.
    """
    fields = {k: opts[k] for k in _FIELDS if opts.get(k) not in (None, ())}
    if opts.get("cache_dir"):
        fields["cache_dir"] = Path(str(opts["cache_dir"]))
    config = RunConfig.of(**fields)
    if suite is None and len(case_ids) != 1:
        raise ConfigError("toolemu serve: give one --case ID (ToolEmu-v0), or --suite NAME (ToolEmuSuite-v0) "
                          f"optionally narrowed by --case; got {len(case_ids)} --case and no --suite")
    env_config, shown = env_config_of(config, connections=connections)
    if suite is None:
        cases = [load_case(case_ids[0])]
    else:
        cases = select_cases(suite, case_ids, real_toolkits=config.real_toolkits, config=env_config)
    return served_cases(cases, env_config, suite=suite is not None), shown
