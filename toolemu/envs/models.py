"""Resolves the models an env needs (emulator, judge, people) and builds its scorers, once per env."""

from __future__ import annotations

from dataclasses import dataclass

from toolemu.core.errors import ConfigError
from toolemu.envs.config import EnvConfig, ModelRef
from toolemu.llm import ChatModel, resolve_model
from toolemu.rewards.mode import EvaluateMode, EvaluationScope, parse_evaluate_mode
from toolemu.rewards.scorer import Scorers, build_scorers, judge_needed


@dataclass(frozen=True, slots=True)
class EpisodeModels:
    """The resolved models and the scorers; ``None`` where a role is not needed."""

    emulator: ChatModel | None
    judge: ChatModel | None
    scorers: Scorers | None
    """What scores the env's episodes (``None`` with ``evaluate="off"``)."""
    npc: ChatModel | None = None
    user: ChatModel | None = None

    @classmethod
    def from_config(cls, config: EnvConfig, *, needs_emulator: bool, needs_npc: bool = False,
                    needs_user: bool = False, mode: EvaluateMode | None = None) -> EpisodeModels:
        """Resolves each role's model (``None`` in the config means the default backend) and builds the scorers
        of ``mode`` (default ``config.evaluate``); the judge model is resolved only when a scorer calls it.

        With ``evaluate="auto"`` the mode must be given: it depends on the case (``effective_evaluate``), so an
        env passes ``effective_evaluate(config.evaluate, case)``.

        Raises:
            ConfigError: an ``auto`` mode; a model spec that cannot be resolved; a scorer that is not registered.
        """

        def resolve(ref: ModelRef) -> ChatModel:
            return resolve_model(ref, base_url=config.base_url, api_key=config.api_key)

        mode = parse_evaluate_mode(config.evaluate) if mode is None else mode
        if mode is EvaluateMode.AUTO:
            raise ConfigError("EpisodeModels.from_config: evaluate='auto' depends on the case; pass "
                              "mode=effective_evaluate('auto', case)")
        scope: EvaluationScope = "rules" if mode is EvaluateMode.RULES else "full"
        scoring = mode is not EvaluateMode.OFF
        judge = resolve(config.judge_model) if judge_needed(mode, config.evaluation) else None
        emulator = resolve(config.emulator_model) if needs_emulator else None
        scorers = build_scorers(config.evaluation, judge, scope) if scoring else None
        npc = resolve(config.npc_model) if needs_npc else None
        user = resolve(config.user_model if config.user_model is not None else config.npc_model) if needs_user else None
        return cls(emulator=emulator, judge=judge, scorers=scorers, npc=npc, user=user)

    def versions(self) -> dict[str, str]:
        """Model names by role, for the trajectory record."""
        roles = {"emulator_model": self.emulator, "judge_model": self.judge, "npc_model": self.npc,
                 "user_model": self.user}
        return {role: m.name for role, m in roles.items() if m is not None}
