"""The ``ChatModel`` protocol every backend implements, with its request and response types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import JsonValue, field_validator

from toolemu.core.types import Frozen, Message
from toolemu.core.untrusted import scrub_surrogates


class SamplingParams(Frozen):
    """How to sample one reply. Part of every cache key."""

    temperature: float = 0.0
    """0 means greedy."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    max_tokens: int = 512
    """Upper bound on generated tokens."""
    stop: tuple[str, ...] = ()
    """Stop strings (ReAct agents stop before ``Observation:``)."""
    seed: int | None = None
    """Sampling seed, where the backend supports one."""
    json_schema: dict[str, JsonValue] | None = None
    """When set, the reply must be one JSON object matching this schema (grammar-constrained where the
    backend allows, ``response_format`` for OpenAI-compatible servers)."""


class ChatResponse(Frozen):
    """One reply."""

    text: str
    """The generated text (lone surrogates, which no file encoding can hold, become U+FFFD)."""
    model: str
    """The model that produced it."""
    finish_reason: str | None = None
    """``stop``, ``length``... as reported by the backend."""
    prompt_tokens: int | None = None
    """Prompt length in tokens, when known."""
    completion_tokens: int | None = None
    """Generated tokens, when known."""
    token_ids: tuple[int, ...] | None = None
    """Generated token ids (local backends; fine-tuning needs them)."""
    logprobs: tuple[float, ...] | None = None
    """Log-probability of each generated token (local backends)."""
    cached: bool = False
    """Whether this reply came from the response cache."""

    @field_validator("text")
    @classmethod
    def _writable(cls, value: str) -> str:
        return scrub_surrogates(value)


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: the agent, the tool emulator and the judges all talk to one of these."""

    @property
    def name(self) -> str:
        """A stable identifier (backend and model), used in cache keys and trajectory records."""
        ...

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatResponse:
        """Returns one reply to ``messages``.

        Raises:
            LLMBackendError: the backend failed (after any retries the backend does itself).
        """
        ...


@runtime_checkable
class TokenCounting(Protocol):
    """A chat model that knows its context window and can count a conversation's prompt tokens (local models).

    Agents use it to keep a long episode's prompt inside the window instead of failing.
    """

    @property
    def context_window(self) -> int:
        """Tokens the model can attend to: prompt plus reply."""
        ...

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Returns the prompt tokens ``messages`` take with this model's chat template."""
        ...


OBSERVATION_CAPS: tuple[int | None, ...] = (None, 4000, 2000, 1000, 400, 150)
"""Per-observation character caps tried in turn when a prompt must shrink to fit a model's window."""


def fits_context(model: ChatModel, messages: Sequence[Message], reserve: int) -> bool:
    """Whether ``messages`` leave ``reserve`` tokens free in ``model``'s window (always true when the model cannot
    count tokens: remote endpoints report an overflow themselves)."""
    if not isinstance(model, TokenCounting):
        return True
    return model.count_tokens(messages) + reserve <= model.context_window
