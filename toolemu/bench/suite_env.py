"""``ToolEmuSuiteEnv`` (``ToolEmuSuite-v0``): many cases behind one env, a case sampled at each ``reset``.

It lives with the bench because it selects cases the way ``toolemu bench --suite`` does.

It holds one ``ToolEmuEnv`` per case, built on first use and kept for later episodes, and resolves each model
once for the whole suite, so a model named by a spec string is loaded once, not once per case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium as gym

from toolemu.bench.suite import select_cases
from toolemu.core.errors import ConfigError, EnvStateError, NotRegisteredError
from toolemu.envs.config import EnvConfig, ModelRef, case_toolkit_plan, effective_evaluate
from toolemu.envs.spaces import UnicodeText
from toolemu.envs.tool_use_env import ToolEmuEnv, with_overrides
from toolemu.llm import ChatModel, resolve_model
from toolemu.rewards.scorer import judge_needed
from toolemu.testcases import Case, load_case
from toolemu.testcases.checker import check_case_for_env

SuiteRef = str | Sequence[str | Case]
"""A suite: a suite name as ``toolemu bench --suite`` takes it (``emulated``, ``real``...), a folder or file of
cases, or a list of case ids, paths and ``Case`` objects."""

OPTION_CASE = "case"
"""``reset(options={"case": id})`` runs that case instead of sampling one."""


def resolve_suite(cases: SuiteRef, config: EnvConfig | None = None) -> list[Case]:
    """The cases a suite reference names, in order (a suite name selects as ``toolemu bench --suite`` does
    under ``config``: its real toolkits and extra specs decide which cases are ``real``).

    Raises:
        ConfigError: the suite is empty or names one case twice.
        NotRegisteredError: an id is neither a built-in case nor a path.
    """
    if isinstance(cases, str):
        resolved = select_cases(cases, config=config)
    else:
        resolved = [c if isinstance(c, Case) else load_case(c) for c in cases]
    if not resolved:
        raise ConfigError("ToolEmuSuite-v0 needs at least one case; pass a suite name, a folder of cases, or a "
                          "list of case ids")
    seen: set[str] = set()
    for case in resolved:
        if case.id in seen:
            raise ConfigError(f"ToolEmuSuite-v0: case `{case.id}` is listed twice; list each case once")
        seen.add(case.id)
    return resolved


def _scores_with_judge(case: Case, config: EnvConfig) -> bool:
    """Whether an env of ``case`` resolves the judge model (a scorer of its mode calls it)."""
    return judge_needed(effective_evaluate(config.evaluate, case), config.evaluation)


def _shared_models(cases: Sequence[Case], config: EnvConfig) -> EnvConfig:
    """``config`` with each model some case needs resolved once, so every case's env shares it."""
    needed = {
        "emulator_model": any(case_toolkit_plan(c, config).needs_emulator for c in cases),
        "judge_model": any(_scores_with_judge(c, config) for c in cases),
        "npc_model": any(c.npcs for c in cases),
        "user_model": config.simulated_user and any(c.user is not None for c in cases),
    }
    if not any(needed.values()):
        return config

    def resolve(ref: ModelRef) -> ChatModel:
        return resolve_model(ref, base_url=config.base_url, api_key=config.api_key)

    resolved: dict[str, ModelRef] = {}
    if needed["npc_model"] or needed["user_model"]:
        resolved["npc_model"] = resolve(config.npc_model)
    if needed["user_model"]:
        user = config.user_model
        resolved["user_model"] = resolve(user) if user is not None else resolved["npc_model"]
    for role in ("emulator_model", "judge_model"):
        if needed[role]:
            resolved[role] = resolve(getattr(config, role))
    # Every model is built now, so the endpoint settings have done their work (they only apply to specs).
    return config.model_copy(update={**resolved, "base_url": None, "api_key": None})


class ToolEmuSuiteEnv(gym.Env[str, str]):
    """A suite of safety test cases as one text env: each ``reset`` samples a case uniformly.

    Args:
        cases: A suite name (``emulated``, ``real``... as ``toolemu bench --suite``), a folder or file of cases,
            or a list of case ids, paths and ``Case`` objects.
        config: An ``EnvConfig`` shared by every case; keyword arguments override its fields.
        **overrides: ``EnvConfig`` fields.

    ``reset(seed=...)`` seeds the case sampler (and each episode's seed, drawn from it);
    ``reset(options={"case": id})`` runs that case. The case id is ``info["case_id"]`` at every step. Every
    case is checked when the env is made, so a case that cannot be graded fails here, not mid-training.
    """

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 (Gymnasium's convention)

    def __init__(self, cases: SuiteRef, config: EnvConfig | None = None, render_mode: str | None = None,
                 **overrides: object) -> None:
        self.config = with_overrides(config or EnvConfig(), overrides)
        self.cases: tuple[Case, ...] = tuple(resolve_suite(cases, self.config))
        for case in self.cases:
            check_case_for_env(case, evaluate=effective_evaluate(self.config.evaluate, case))
        self._inner_config = _shared_models(self.cases, self.config)
        self.render_mode = render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self._by_id = {c.id: c for c in self.cases}
        self._envs: dict[str, ToolEmuEnv] = {}
        self._current: ToolEmuEnv | None = None

    @property
    def case_ids(self) -> tuple[str, ...]:
        """The suite's case ids, in order."""
        return tuple(c.id for c in self.cases)

    @property
    def current(self) -> ToolEmuEnv:
        """The env of the episode in progress (or of the last one).

        Raises:
            EnvStateError: no episode was started yet.
        """
        if self._current is None:
            raise EnvStateError("ToolEmuSuite-v0 has no episode yet; call env.reset() first")
        return self._current

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Samples a case (or takes ``options["case"]``) and starts an episode of it.

        Raises:
            ConfigError: ``options`` has a key other than ``case``.
            NotRegisteredError: ``options["case"]`` is not a case of the suite (the message suggests one).
        """
        super().reset(seed=seed)
        options = dict(options or {})
        wanted = options.pop(OPTION_CASE, None)
        if options:
            raise ConfigError(f"ToolEmuSuite-v0 reset options: unknown key `{sorted(options)[0]}`; the only option "
                              f"is `{OPTION_CASE}` (a case id)")
        if wanted is None:
            case = self.cases[int(self.np_random.integers(len(self.cases)))]
        elif isinstance(wanted, str) and wanted in self._by_id:
            case = self._by_id[wanted]
        else:
            raise NotRegisteredError("case of this suite", str(wanted), self._by_id)
        # Each episode gets its own seed from the sampler: the run is reproducible from the first seed alone.
        episode_seed = int(self.np_random.integers(2**31 - 1))
        env = self._envs.get(case.id)
        if env is None:
            env = self._envs[case.id] = ToolEmuEnv(case, self._inner_config)
        self._current = env
        return env.reset(seed=episode_seed)

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Runs one agent action in the current case's episode (``ToolEmuEnv.step``).

        Raises:
            EnvStateError: called before ``reset`` or after the episode ended.
        """
        if self._current is None:
            raise EnvStateError("step() called before reset(); call env.reset() first")
        return self._current.step(action)

    def render(self) -> str | None:
        """The current episode's trajectory as text (``render_mode="ansi"``)."""
        return self._current.render() if self._current is not None else None

    def close(self) -> None:
        """Closes every case's env (sandboxes and toolkits)."""
        envs, self._envs, self._current = list(self._envs.values()), {}, None
        for env in envs:
            env.close()
        super().close()
