"""A ReAct agent over any ``ChatModel``: Thought / Action / Action Input, or Final Answer, one step per call.

Three system-prompt variants (plain, safety-aware, helpful-and-safe) share one format description.
"""

from __future__ import annotations

import hashlib
import logging
from functools import cache
from importlib import resources
from string import Template
from typing import Literal, get_args

from toolemu.core.errors import ConfigError, EnvStateError
from toolemu.core.react import KEYWORDS, OBSERVATION, THOUGHT, observation_text
from toolemu.core.types import Message
from toolemu.llm.backend import ChatModel, SamplingParams, TokenCounting

logger = logging.getLogger(__name__)

ReActVariant = Literal["plain", "safety", "helpful_safe"]
"""``plain``: just do the task. ``safety``: be careful, ask or refuse when risky. ``helpful_safe``: finish
the task and stay safe (do the safe parts, ask about the risky ones)."""

REACT_PROMPT_REVISION = 2
"""Bump when the agent's behaviour changes without a prompt edit (the prompt hash covers edits)."""

OBSERVATION_PREFIX = f"{OBSERVATION}:"
ELIDED_OBSERVATION = OBSERVATION_PREFIX + " [omitted to fit the model's context window: {chars} characters]"
CONTEXT_MARGIN_TOKENS = 32
"""Room kept free beyond the reply budget (chat-template tokens the count may miss)."""
TRIM_TARGET = 0.75
"""When the prompt overflows, older observations are dropped until it fills this share of its budget, so the
next few steps fit without another trim (each trim changes the prompt prefix and costs a full re-read)."""
OBSERVATION_STOPS: tuple[str, ...] = (f"\n{OBSERVATION}:", f"\n{OBSERVATION} :")
"""The agent stops before writing the tool's answer itself."""
STOP_STRINGS: tuple[str, ...] = (*OBSERVATION_STOPS, f"\n{THOUGHT}:")
"""Also stops before a second step: small models often write Thought/Action/Action Input again and again
without an observation, to the end of the token budget (512 tokens, half a minute on a 2-core CPU)."""


@cache
def system_prompt(variant: ReActVariant) -> str:
    """Returns the system prompt of ``variant``: its guidance followed by the shared ReAct format.

    Raises:
        ConfigError: unknown ``variant``.
    """
    if variant not in get_args(ReActVariant):
        raise ConfigError(
            f"ReAct variant `{variant}` is unknown; use one of {', '.join(get_args(ReActVariant))}"
        )
    folder = resources.files("toolemu.agents").joinpath("prompts")
    guidance = folder.joinpath(f"react_{variant}.md").read_text(encoding="utf-8").strip()
    react_format = Template(folder.joinpath("react_format.md").read_text(encoding="utf-8").strip()).substitute(KEYWORDS)
    return f"{guidance}\n\n{react_format}"


def format_observation(observation: str) -> str:
    """Prefixes an env observation with ``Observation:`` unless it already has it.

    Examples:
        >>> format_observation('{"ok": true}')
        'Observation: {"ok": true}'
        >>> format_observation("Observation: done")
        'Observation: done'
    """
    return observation_text(observation)


def clean_reply(text: str) -> str:
    """Cuts a reply before any self-written observation or second step (for backends that ignore stop strings).

    Examples:
        >>> clean_reply("Action: A\\nAction Input: {}\\nObservation: made up\\nFinal Answer: x")
        'Action: A\\nAction Input: {}'
        >>> clean_reply("\\nThought: a\\nAction: A\\nAction Input: {}\\nThought: again\\nAction: A")
        'Thought: a\\nAction: A\\nAction Input: {}'
    """
    text = text.lstrip()
    cuts = [i for i in (text.find(stop) for stop in STOP_STRINGS) if i >= 0]
    return (text[: min(cuts)] if cuts else text).strip()


class ReActAgent:
    """An LM agent that keeps the chat history of the episode and replies in the ReAct format.

    Args:
        model: The chat model that plays the agent.
        variant: Which system prompt to use.
        max_tokens: Token budget of one step.
        temperature: Sampling temperature (0 = greedy).
        seed: Sampling seed, where the backend supports one.
        context_window: Tokens the prompt plus one reply may take. Default: the model's own window when it
            can count tokens (local models), else no limit. Past it the oldest observations are replaced by a
            one-line note, then the oldest exchanges dropped; the system prompt and the instruction stay.

    Raises:
        ConfigError: unknown ``variant``.
    """

    def __init__(
        self,
        model: ChatModel,
        variant: ReActVariant = "plain",
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int | None = None,
        context_window: int | None = None,
    ) -> None:
        self.model = model
        self.context_window = context_window
        self.variant: ReActVariant = variant
        self.system_prompt = system_prompt(variant)
        self.params = SamplingParams(
            temperature=temperature, max_tokens=max_tokens, stop=STOP_STRINGS, seed=seed
        )
        digest = hashlib.sha256(self.system_prompt.encode("utf-8")).hexdigest()[:8]
        self.version = f"react_{variant}/{REACT_PROMPT_REVISION}-{digest}"
        """Recorded with trajectories; changes whenever the prompt text changes."""
        self._messages: list[Message] = []
        self._first_observation: str | None = None

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation so far (system prompt, observations, the agent's replies)."""
        return tuple(self._messages)

    def reset(self, observation: str) -> None:
        """Starts a new episode: the system prompt, then ``observation`` as the user's first message."""
        self._messages = [
            Message(role="system", content=self.system_prompt),
            Message(role="user", content=observation),
        ]
        self._first_observation = observation

    def act(self, observation: str) -> str:
        """Asks the model for the next step and returns it (cut before any self-written observation).

        Raises:
            EnvStateError: ``act`` before ``reset``.
            LLMBackendError: the model call failed.
        """
        if not self._messages:
            raise EnvStateError("ReActAgent.act() called before reset(); call reset(first_observation) first")
        first, self._first_observation = self._first_observation, None
        if observation != first:
            self._messages.append(Message(role="user", content=format_observation(observation)))
        self._fit_context()
        reply = self.model.chat(self._messages, self.params)
        if not reply.text.strip() and reply.finish_reason == "stop":
            # The reply began with a stop string (a "\nThought:" before anything else): ask again with the
            # observation stops alone, so the first step is not lost.
            reply = self.model.chat(self._messages, self.params.model_copy(update={"stop": OBSERVATION_STOPS}))
        action = clean_reply(reply.text)
        logger.debug("react agent (%s) step %d: %r", self.variant, len(self._messages) // 2, action[:80])
        self._messages.append(Message(role="assistant", content=action))
        return action

    def _count(self, messages: list[Message]) -> int:
        if isinstance(self.model, TokenCounting):
            return self.model.count_tokens(messages)
        return sum(len(m.content) for m in messages) // 3 + 8 * len(messages)  # a conservative estimate

    def _fit_context(self) -> None:
        """Keeps the prompt within the context window: elides old observations, then drops old exchanges."""
        window = self.context_window
        if window is None and isinstance(self.model, TokenCounting):
            window = self.model.context_window
        if window is None:
            return
        budget = window - self.params.max_tokens - CONTEXT_MARGIN_TOKENS
        messages = self._messages
        if self._count(messages) <= budget:
            return
        target = int(budget * TRIM_TARGET)
        # Messages 0 and 1 are the system prompt and the instruction; the newest observation is always kept.
        for i in range(2, len(messages) - 1):
            message = messages[i]
            if message.role == "user" and not message.content.startswith(ELIDED_OBSERVATION[:20]):
                messages[i] = Message(role="user", content=ELIDED_OBSERVATION.format(chars=len(message.content)))
                if self._count(messages) <= target:
                    break
        while self._count(messages) > budget and len(messages) > 4:
            del messages[2:4]  # the oldest exchange: an observation and the reply that followed it
        logger.info("react agent: prompt trimmed to %d tokens to fit a window of %d", self._count(messages), window)
