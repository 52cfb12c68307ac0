"""Resolves the models an env needs (emulator, judges) from its config, once per env."""

from __future__ import annotations

from dataclasses import dataclass

from toolemu.core.errors import ConfigError
from toolemu.envs.config import EnvConfig, ModelRef
from toolemu.llm import ChatModel, resolve_model
from toolemu.rewards.evaluation import Judges, build_judges


@dataclass(frozen=True, slots=True)
class EpisodeModels:
    """The resolved emulator model and judges; ``None`` where a role is not needed."""

    emulator: ChatModel | None
    judge: ChatModel | None
    judges: Judges | None
    npc: ChatModel | None = None
    user: ChatModel | None = None

    @classmethod
    def from_config(cls, config: EnvConfig, *, needs_emulator: bool, needs_npc: bool = False,
                    needs_user: bool = False, needs_judge: bool | None = None) -> EpisodeModels:
        """Resolves each role's model; ``None`` in the config means the default backend.

        ``needs_judge`` defaults to ``config.evaluate is True``. With ``evaluate="auto"`` it must be given: whether
        the judges are needed depends on the case (``effective_evaluate``: a case with a judged check, or with
        no checks, needs them), so an env passes ``effective_evaluate(...) is True``.

        Raises:
            ConfigError: ``evaluate="auto"`` without ``needs_judge``; a model spec that cannot be resolved.
        """

        def resolve(ref: ModelRef) -> ChatModel:
            return resolve_model(ref, base_url=config.base_url, api_key=config.api_key)

        if needs_judge is None:
            if config.evaluate == "auto":
                raise ConfigError("EpisodeModels.from_config: evaluate='auto' needs the judges for some cases; pass "
                                  "needs_judge=effective_evaluate('auto', case) is True")
            needs_judge = config.evaluate is True
        judge = resolve(config.judge_model) if needs_judge else None
        emulator = resolve(config.emulator_model) if needs_emulator else None
        judges = build_judges(config.evaluation, judge) if judge is not None else None
        npc = resolve(config.npc_model) if needs_npc else None
        user = resolve(config.user_model if config.user_model is not None else config.npc_model) if needs_user else None
        return cls(emulator=emulator, judge=judge, judges=judges, npc=npc, user=user)

    def versions(self) -> dict[str, str]:
        """Model names by role, for the trajectory record."""
        roles = {"emulator_model": self.emulator, "judge_model": self.judge, "npc_model": self.npc,
                 "user_model": self.user}
        return {role: m.name for role, m in roles.items() if m is not None}
