"""Turns an episode's conversation into one token sequence with a mask of the policy's own tokens.

Observations, the system prompt and the chat template's scaffolding are masked out; each assistant reply and
the end-of-turn tokens the template adds after it are trained on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolemu.core.errors import ConfigError
from toolemu.core.types import Message


@dataclass(frozen=True, slots=True)
class TokenSequence:
    """One episode as the trainer sees it."""

    ids: tuple[int, ...]
    """Every token of the conversation, as the chat template renders it."""
    mask: tuple[bool, ...]
    """True where the token was written by the policy (loss applies), False elsewhere."""

    @property
    def policy_tokens(self) -> int:
        """How many tokens the loss covers."""
        return sum(self.mask)


def _render(tokenizer: Any, messages: Sequence[Message], *, generation_prompt: bool) -> str:
    chat = [{"role": m.role, "content": m.content} for m in messages]
    text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=generation_prompt)
    return str(text)


def _ids(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def build_sequence(tokenizer: Any, messages: Sequence[Message], *, max_tokens: int | None = None) -> TokenSequence:
    """Renders ``messages`` with the tokenizer's chat template and marks the assistant's tokens.

    Each piece is the text one more message adds to the rendering; pieces are tokenized one by one so that
    the boundary between an observation and a reply is a token boundary.

    Args:
        tokenizer: A transformers tokenizer with a chat template.
        messages: System prompt, observations (user) and replies (assistant), in order.
        max_tokens: Cut the sequence to this many tokens (the longest episodes are cut, not dropped).

    Raises:
        ConfigError: the chat template is not prefix-preserving (rendering one more message rewrites earlier
            text), so the policy's tokens cannot be told apart; use a template that only appends.
    """
    ids: list[int] = []
    mask: list[bool] = []
    done = ""

    def extend(text: str, trained: bool, index: int) -> None:
        nonlocal done
        if not text.startswith(done):
            raise ConfigError(
                f"the chat template rewrites earlier turns when message {index} ({messages[index].role}) is "
                "added, so the policy's tokens cannot be masked; use a prefix-preserving chat template"
            )
        piece = _ids(tokenizer, text[len(done):])
        ids.extend(piece)
        mask.extend([trained] * len(piece))
        done = text

    for k, message in enumerate(messages):
        if message.role != "assistant":
            continue
        extend(_render(tokenizer, messages[:k], generation_prompt=True), False, k)
        extend(_render(tokenizer, messages[: k + 1], generation_prompt=False), True, k)
    if max_tokens is not None:
        ids, mask = ids[:max_tokens], mask[:max_tokens]
    return TokenSequence(ids=tuple(ids), mask=tuple(mask))
