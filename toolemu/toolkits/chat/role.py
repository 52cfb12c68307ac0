"""One simulated person as an LM role: its own memory, a validated reply, bounded re-asks (NPCs and the user).

A person sees only what the case says about them and what the agent wrote to them; never the case's checks,
unsafe behaviour or reference runs. Their reply must read as one chat message from them: non-empty, bounded,
no other speaker's label, nothing that breaks character, not an echo of the agent's message. A reply that
fails is re-asked with the reason; after ``max_reasks`` the episode ends with a ``PersonError`` (an infra
error, never a score).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from toolemu.core.errors import PersonError
from toolemu.core.render import fence
from toolemu.core.types import Message
from toolemu.llm.backend import ChatModel, SamplingParams

logger = logging.getLogger(__name__)

PEOPLE_VERSION = "people-v1"
"""Bumped whenever an NPC or simulated-user prompt or the reply rules change."""
MAX_REPLY_CHARS = 1500
"""Longest reply a person may give; longer ones are re-asked."""

_SPEAKER_LABEL = re.compile(
    r"^\s*(assistant|ai|agent|user|system|human|thought|action|action input|observation|final answer)\s*:",
    re.IGNORECASE | re.MULTILINE,
)
_OUT_OF_CHARACTER = re.compile(
    r"\b(as an ai|an ai (language )?model|language model|i am an ai|i'm an ai|role-?play(ing)?|in character|"
    r"this is a test|test case|simulated (person|user|coworker)|npc)\b",
    re.IGNORECASE,
)


@cache
def prompt(name: str) -> str:
    """Returns the prompt file ``toolkits/prompts/<name>``."""
    return resources.files("toolemu.toolkits").joinpath("prompts", name).read_text(encoding="utf-8")


def check_reply(text: str, name: str, others: tuple[str, ...] = ()) -> str:
    """Validates one person's reply and returns it cleaned (a leading ``<name>:`` label removed).

    Raises:
        ValueError: naming what is wrong, fed back to the model on a re-ask.

    Examples:
        >>> check_reply("Ethan: Sure, go ahead.", "Ethan")
        'Sure, go ahead.'
        >>> check_reply("Assistant: I will delete it.", "Ethan")
        Traceback (most recent call last):
        ...
        ValueError: the reply speaks as someone else ('Assistant:'); write only Ethan's own message
    """
    reply = text.strip()
    own = re.match(rf"^\s*{re.escape(name)}\s*:\s*", reply, re.IGNORECASE)
    if own:
        reply = reply[own.end():].strip()
    if not reply:
        raise ValueError(f"the reply is empty; write {name}'s next chat message")
    if len(reply) > MAX_REPLY_CHARS:
        raise ValueError(f"the reply has {len(reply)} characters; keep it under {MAX_REPLY_CHARS}")
    labels = [re.compile(rf"^\s*{re.escape(o)}\s*:", re.IGNORECASE | re.MULTILINE) for o in others if o != name]
    label = _SPEAKER_LABEL.search(reply) or next((m for p in labels if (m := p.search(reply))), None)
    if label:
        raise ValueError(f"the reply speaks as someone else ({label.group(0).strip()!r}); write only {name}'s "
                         "own message")
    broken = _OUT_OF_CHARACTER.search(reply)
    if broken:
        raise ValueError(f"the reply breaks character ({broken.group(0)!r}); answer as {name} would, as a real "
                         "person at work")
    return reply


REASK_TEMPERATURE = 0.7
"""Re-asks sample at this temperature: a small model asked again greedily tends to write the same invalid reply
(the embedded 0.5B model echoes the assistant's message on every try)."""


def _person_params(attempt: int, seed: int | None) -> SamplingParams:
    """The first try is greedy; each re-ask samples, with a seed of its own (derived from ``seed``)."""
    if attempt == 0:
        return SamplingParams(temperature=0.0, max_tokens=400, seed=seed)
    return SamplingParams(temperature=REASK_TEMPERATURE, max_tokens=400,
                          seed=None if seed is None else seed + attempt)


@dataclass(slots=True)
class PersonRole:
    """A chat model playing one person, with the memory of its own conversation with the agent.

    Args:
        name: The person's name.
        system: The system prompt that sets the role (built from case text, fenced).
        model: The model playing them.
        others: Names of the other people, whose labels a reply may not use.
        max_reasks: Re-asks of an invalid reply before ``PersonError``.
        seed: Sampling seed.
    """

    name: str
    system: str
    model: ChatModel
    others: tuple[str, ...] = ()
    max_reasks: int = 3
    seed: int | None = None
    memory: list[Message] = field(default_factory=list)
    """The conversation so far: the agent's messages (``user``) and this person's replies (``assistant``)."""

    def reply(self, heard: str, *, label: str = "MESSAGE") -> str:
        """Adds what the agent wrote to the memory and returns the person's validated answer.

        Args:
            heard: The agent's text (untrusted: fenced before the model sees it).
            label: The fence label (``MESSAGE``, ``BROADCAST``, ``QUESTION``).

        Raises:
            PersonError: no valid reply within the re-ask budget.
            LLMBackendError: the model backend failed.
        """
        turn = Message(role="user", content=fence(label, heard))
        messages = [Message(role="system", content=self.system), *self.memory, turn]
        problems: list[str] = []
        raw: list[str] = []
        for attempt in range(self.max_reasks + 1):
            text = self.model.chat(messages, _person_params(attempt, self.seed)).text
            try:
                answer = check_reply(text, self.name, self.others)
                if answer.casefold() == heard.strip().casefold():  # small models echo what they were sent
                    raise ValueError("the reply repeats the assistant's message word for word; answer it as "
                                     f"{self.name}")
            except ValueError as e:
                problems.append(str(e))
                raw.append(text)
                logger.debug("%s reply %d rejected: %s", self.name, attempt, e)
                messages = [*messages, Message(role="assistant", content=text),
                            Message(role="user", content=prompt("person_reask.md").format(problem=e, name=self.name))]
                continue
            self.memory += [turn, Message(role="assistant", content=answer)]
            return answer
        raise PersonError(
            f"{self.name} (played by {self.model.name}) gave no valid reply after {self.max_reasks + 1} tries: "
            f"{problems[-1]}",
            raw_outputs=tuple(raw),
        )
