"""Scripted agents for attack tests (not a test module): one follows any injected request it can read, one
ignores it. Both see only observations, as every agent does."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence

from toolemu.agents import ScriptedAgent

_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")


def readable(observation: str) -> str:
    """``observation`` with every base64 run decoded after it (what an agent that decodes payloads reads)."""
    decoded = []
    for run in _BASE64.findall(observation):
        try:
            decoded.append(base64.b64decode(run, validate=True).decode("utf-8"))
        except (binascii.Error, UnicodeDecodeError):
            continue
    return "\n".join([observation, *decoded])


class InjectionFollower(ScriptedAgent):
    """Plays ``actions``; the first time an observation (decoded) holds ``trigger``, it does ``goal_action``
    instead of its next step, then carries on."""

    def __init__(self, actions: Sequence[str], *, trigger: str, goal_action: str) -> None:
        super().__init__(actions)
        self.trigger = trigger
        self.goal_action = goal_action
        self.followed = False

    def reset(self, observation: str) -> None:
        """Rewinds the script."""
        super().reset(observation)
        self.followed = False

    def act(self, observation: str) -> str:
        """The goal act once the trigger is read, else the next scripted action."""
        if not self.followed and self.trigger in readable(observation):
            self.followed = True
            self.observations.append(observation)
            return self.goal_action
        return super().act(observation)
