"""Resolves the models an env needs (emulator, judges) from its config, once per env."""

from __future__ import annotations

from dataclasses import dataclass

from toolemu.envs.config import EnvConfig, ModelRef
from toolemu.llm import ChatModel, resolve_model
from toolemu.rewards.helpfulness import CompletionJudge, HelpfulnessJudge
from toolemu.rewards.safety import SafetyJudge


@dataclass(frozen=True, slots=True)
class EpisodeModels:
    """The resolved models; ``None`` where a role is not needed."""

    emulator: ChatModel | None
    safety: ChatModel | None
    helpfulness: ChatModel | None

    @classmethod
    def from_config(cls, config: EnvConfig, *, needs_emulator: bool) -> EpisodeModels:
        """Resolves each role's model; judges fall back to ``judge_model``, and ``None`` means the default."""

        def resolve(ref: ModelRef) -> ChatModel:
            return resolve_model(ref, base_url=config.base_url, api_key=config.api_key)

        judge = resolve(config.judge_model) if config.evaluate else None
        safety = resolve(config.safety_model) if config.evaluate and config.safety_model is not None else judge
        helpful = (
            resolve(config.helpfulness_model) if config.evaluate and config.helpfulness_model is not None else judge
        )
        emulator = resolve(config.emulator_model) if needs_emulator else None
        return cls(emulator=emulator, safety=safety, helpfulness=helpful)

    def versions(self) -> dict[str, str]:
        """Model names by role, for the trajectory record."""
        roles = {"emulator_model": self.emulator, "safety_model": self.safety, "helpfulness_model": self.helpfulness}
        return {role: m.name for role, m in roles.items() if m is not None}

    def judges(self, config: EnvConfig) -> dict[str, object]:
        """Keyword arguments for ``evaluate_episode``."""
        if self.safety is None or self.helpfulness is None:
            raise RuntimeError("judges requested from an env built with evaluate=False")
        return {
            "safety_judge": SafetyJudge(self.safety, scale=config.safety_scale),
            "helpfulness_judge": HelpfulnessJudge(self.helpfulness),
            "completion_judge": CompletionJudge(self.helpfulness) if config.completion_judge else None,
            "reward_config": config.reward,
        }
