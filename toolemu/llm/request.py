"""One chat request (messages + sampling params) and its canonical JSON and sha256 key.

Replay fixtures key on the request alone; the response cache also mixes in the model name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from toolemu.core.types import Frozen, Message
from toolemu.llm.backend import SamplingParams


class ChatRequest(Frozen):
    """A request as a model received it: what ``FakeLLM.requests`` records and what fixtures key on."""

    messages: tuple[Message, ...]
    """The conversation sent."""
    params: SamplingParams = SamplingParams()
    """The sampling parameters sent."""

    @classmethod
    def of(cls, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatRequest:
        """Builds a request from ``ChatModel.chat`` arguments (``None`` params means the defaults)."""
        return cls(messages=tuple(messages), params=params if params is not None else SamplingParams())

    def canonical_json(self, model: str | None = None) -> str:
        """Returns the request as compact JSON with sorted keys; ``model`` is included only when given.

        Examples:
            >>> ChatRequest.of([Message(role="user", content="hi")]).canonical_json()[:40]
            '{"messages":[{"content":"hi","role":"use'
        """
        payload: dict[str, object] = {
            "messages": [m.model_dump(mode="json") for m in self.messages],
            "params": self.params.model_dump(mode="json"),
        }
        if model is not None:
            payload["model"] = model
        return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def key(self, model: str | None = None) -> str:
        """Returns the sha256 hex digest of :meth:`canonical_json`."""
        return hashlib.sha256(self.canonical_json(model).encode("utf-8")).hexdigest()
