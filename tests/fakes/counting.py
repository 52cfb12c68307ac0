"""A fake chat model that also counts tokens (one per character) and has a small context window."""

from __future__ import annotations

from collections.abc import Sequence

from toolemu.core.types import Message
from toolemu.llm.fake import FakeLLM


class CountingFakeLLM(FakeLLM):
    """``FakeLLM`` with ``context_window`` and ``count_tokens``, like a local model (one token per character)."""

    def __init__(self, replies: Sequence[str], window: int) -> None:
        super().__init__(list(replies))
        self._window = window

    @property
    def context_window(self) -> int:
        return self._window

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return sum(len(m.content) for m in messages)
