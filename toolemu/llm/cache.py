"""``CachedModel``: an on-disk response cache in front of any ``ChatModel``.

Keyed on sha256 of (model name, messages, every sampling param incl. seed and json_schema); errors are never
cached.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from pydantic import ValidationError

from toolemu.core.types import Message
from toolemu.llm._atomic import write_text_atomic
from toolemu.llm.backend import ChatModel, ChatResponse, SamplingParams
from toolemu.llm.request import ChatRequest

logger = logging.getLogger(__name__)


class CachedModel:
    """Answers repeated requests from disk and forwards the rest to ``inner``.

    A cached reply is returned with ``cached=True``. Entries are ``<cache_dir>/<key[:2]>/<key>.json`` and are
    written atomically, so concurrent runs sharing a cache folder never read a partial entry.

    A request with ``temperature > 0`` and no ``seed`` is not a reproducible function of its key (repeated
    trials must see fresh samples), so it is forwarded without caching.

    Args:
        inner: The model to cache.
        cache_dir: The cache folder; created if missing.
    """

    def __init__(self, inner: ChatModel, cache_dir: str | Path) -> None:
        self._inner = inner
        self._dir = Path(cache_dir)
        self.hits = 0
        """Requests answered from the cache."""
        self.misses = 0
        """Requests forwarded to ``inner`` (including uncacheable ones)."""

    @property
    def name(self) -> str:
        """The wrapped model's name; the cache is transparent."""
        return self._inner.name

    @property
    def inner(self) -> ChatModel:
        """The wrapped model."""
        return self._inner

    @property
    def cache_dir(self) -> Path:
        """The cache folder."""
        return self._dir

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        """Returns ``self``: a model is a shared handle (``gym.make`` deep-copies env kwargs)."""
        return self

    def describe(self) -> str:
        """Returns a one-line description for the CLI."""
        describe = getattr(self._inner, "describe", None)
        inner = describe() if callable(describe) else self._inner.name
        return f"{inner}, cached in {self._dir}"

    def key(self, messages: Sequence[Message], params: SamplingParams | None = None) -> str:
        """Returns the cache key of a request to this model."""
        return ChatRequest.of(messages, params).key(model=self._inner.name)

    def path(self, key: str) -> Path:
        """Returns the file that holds the entry for ``key``."""
        return self._dir / key[:2] / f"{key}.json"

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatResponse:
        """Returns the cached reply for this request, or asks ``inner`` and stores its reply.

        Raises:
            LLMBackendError: ``inner`` failed; nothing is stored.
        """
        request = ChatRequest.of(messages, params)
        if request.params.temperature > 0 and request.params.seed is None:
            self.misses += 1
            return self._inner.chat(request.messages, request.params)
        key = request.key(model=self._inner.name)
        path = self.path(key)
        cached = self._read(path)
        if cached is not None:
            self.hits += 1
            logger.debug("cache hit %s for %s", key, self._inner.name)
            return cached
        self.misses += 1
        response = self._inner.chat(request.messages, request.params)
        entry = {
            "key": key,
            "model": self._inner.name,
            "request": request.model_dump(mode="json"),
            "response": response.model_dump(mode="json", exclude={"cached"}),
        }
        write_text_atomic(path, json.dumps(entry, ensure_ascii=False, sort_keys=True))
        return response

    def _read(self, path: Path) -> ChatResponse | None:
        """Returns the entry at ``path`` marked ``cached=True``, or ``None`` when there is no usable entry."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            response = ChatResponse.model_validate(json.loads(text)["response"])
        except (ValueError, KeyError, TypeError, ValidationError) as err:
            # Writes are atomic, so this is a hand-edited or foreign file: recompute and overwrite it.
            logger.warning("ignoring unreadable cache entry %s (%s); it will be rewritten", path, err)
            return None
        return response.model_copy(update={"cached": True})
