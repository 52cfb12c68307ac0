"""``FakeLLM``, a deterministic ``ChatModel`` for tests (scripted, callable, replay), and ``RecordingModel``.

Replay fixtures are ``<dir>/<sha256 of the canonical request>.json``; ``RecordingModel`` writes them.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Self

from pydantic import ValidationError

from toolemu.core.errors import FixtureMissingError, LLMBackendError
from toolemu.core.types import Message
from toolemu.llm._atomic import write_text_atomic
from toolemu.llm.backend import ChatModel, ChatResponse, SamplingParams
from toolemu.llm.request import ChatRequest

logger = logging.getLogger(__name__)

Reply = str | ChatResponse | Exception
"""A scripted reply: text, a full response, or an exception to raise (to test error handling)."""

ReplyFunction = Callable[[tuple[Message, ...], SamplingParams], str | ChatResponse]
"""Computes a reply from the messages and sampling params of a request."""

RECORD_COMMAND = "pytest --record-llm --record-llm-model <model spec>"
"""The command that refreshes the test suite's replay fixtures (``llm_fixture``) against a real endpoint."""


def _cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """Returns ``text`` cut before the earliest stop string, as real backends cut it."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return text[: min(cuts)] if cuts else text


class FakeLLM:
    """A ``ChatModel`` whose replies are fixed in advance; every request is recorded in ``requests``.

    A text reply is cut before the first stop string in ``params.stop``, as a real backend would cut it.

    Examples:
        >>> llm = FakeLLM(["Final Answer: done"])
        >>> llm.chat([Message(role="user", content="hi")]).text
        'Final Answer: done'
        >>> llm.requests[0].messages[0].content
        'hi'
    """

    def __init__(self, replies: Iterable[Reply] = (), *, name: str = "fake") -> None:
        """Creates a scripted fake that returns ``replies`` in order.

        Args:
            replies: Texts, responses, or exceptions (raised when their turn comes).
            name: The model name reported in responses and cache keys.
        """
        self._name = name
        self._script: deque[Reply] = deque(replies)
        self._mode = "scripted"
        self._function: Callable[[ChatRequest], ChatResponse | str] | None = None
        self._lock = threading.Lock()
        self.requests: list[ChatRequest] = []
        """Every request received, in order (including ones that raised)."""

    @classmethod
    def from_function(cls, fn: ReplyFunction, *, name: str = "fake") -> FakeLLM:
        """Creates a fake that answers each request with ``fn(messages, params)``.

        Examples:
            >>> echo = FakeLLM.from_function(lambda messages, params: messages[-1].content.upper())
            >>> echo.chat([Message(role="user", content="hi")]).text
            'HI'
        """
        fake = cls(name=name)
        fake._mode = "callable"
        fake._function = lambda request: fn(request.messages, request.params)
        return fake

    @classmethod
    def constant(cls, text: str, *, name: str = "fake") -> FakeLLM:
        """Creates a fake that answers every request with ``text``."""
        fake = cls.from_function(lambda messages, params: text, name=name)
        fake._mode = f"always answers {text[:40]!r}"
        return fake

    @classmethod
    def replay(cls, fixture_dir: str | Path, *, name: str = "fake-replay") -> FakeLLM:
        """Creates a fake that answers from fixtures recorded by ``RecordingModel``.

        Raises (on ``chat``):
            FixtureMissingError: no fixture for the request; the message names the key and the command
                that records it.
        """
        folder = Path(fixture_dir)
        fake = cls(name=name)
        fake._mode = f"replaying fixtures from {folder}"
        fake._function = lambda request: load_fixture(folder, request)
        return fake

    @property
    def name(self) -> str:
        """The model name given at construction."""
        return self._name

    @property
    def remaining(self) -> int:
        """How many scripted replies are left (0 for callable and replay fakes)."""
        return len(self._script)

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        """Returns ``self``: a model is a shared handle (``gym.make`` deep-copies env kwargs)."""
        return self

    def describe(self) -> str:
        """Returns a one-line description for the CLI."""
        mode = f"scripted, {self.remaining} replies left" if self._mode == "scripted" else self._mode
        return f"fake model `{self._name}` ({mode})"

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatResponse:
        """Returns the next reply for this request.

        Raises:
            LLMBackendError: the script ran out, or a scripted exception came up.
            FixtureMissingError: a replay fake has no fixture for the request.
        """
        request = ChatRequest.of(messages, params)
        function = self._function
        reply: Reply = ""
        with self._lock:
            self.requests.append(request)
            if function is None:
                if not self._script:
                    raise LLMBackendError(
                        f"FakeLLM `{self._name}` ran out of scripted replies at request "
                        f"{len(self.requests)}; add more replies to its script"
                    )
                reply = self._script.popleft()
        if function is not None:
            reply = function(request)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, ChatResponse):
            return reply
        if not isinstance(reply, str):
            raise TypeError(
                f"FakeLLM reply must be str, ChatResponse or an exception, got {type(reply).__name__}"
            )
        return ChatResponse(
            text=_cut_at_stop(reply, request.params.stop), model=self._name, finish_reason="stop"
        )


def fixture_path(fixture_dir: Path, request: ChatRequest) -> Path:
    """Returns where the fixture for ``request`` lives: ``<fixture_dir>/<key>.json``."""
    return fixture_dir / f"{request.key()}.json"


def load_fixture(fixture_dir: Path, request: ChatRequest) -> ChatResponse:
    """Returns the recorded response for ``request``.

    Raises:
        FixtureMissingError: there is no fixture file for the request.
        LLMBackendError: the fixture file exists but is not a valid recording.
    """
    path = fixture_path(fixture_dir, request)
    if not path.is_file():
        last = request.messages[-1].content[:60] if request.messages else ""
        raise FixtureMissingError(
            f"no recorded LLM reply for request {request.key()} (expected {path}; last message {last!r}). "
            f"Record it against a real endpoint with `{RECORD_COMMAND}` and review the new fixture"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ChatResponse.model_validate(data["response"])
    except (OSError, ValueError, KeyError, TypeError, ValidationError) as err:
        raise LLMBackendError(
            f"LLM fixture {path} is not a valid recording ({err}); delete it and re-record with "
            f"`{RECORD_COMMAND}`"
        ) from err


class RecordingModel:
    """Wraps a real ``ChatModel`` and writes each request/response pair as a replay fixture.

    Args:
        inner: The model that answers.
        fixture_dir: Where fixtures go; created if missing. Existing fixtures for the same request are
            overwritten.
    """

    def __init__(self, inner: ChatModel, fixture_dir: str | Path) -> None:
        self._inner = inner
        self._dir = Path(fixture_dir)
        self.requests: list[ChatRequest] = []
        """Every request received, in order."""

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self._inner.name

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        """Returns ``self``: a model is a shared handle (``gym.make`` deep-copies env kwargs)."""
        return self

    def describe(self) -> str:
        """Returns a one-line description for the CLI."""
        return f"{self._inner.name} (recording fixtures to {self._dir})"

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatResponse:
        """Asks the wrapped model, writes the fixture, and returns the response.

        Raises:
            LLMBackendError: the wrapped model failed; nothing is recorded.
        """
        request = ChatRequest.of(messages, params)
        self.requests.append(request)
        response = self._inner.chat(request.messages, request.params)
        record = {
            "key": request.key(),
            "model": self._inner.name,
            "request": request.model_dump(mode="json"),
            "response": response.model_dump(mode="json", exclude={"cached"}),
        }
        path = fixture_path(self._dir, request)
        write_text_atomic(path, json.dumps(record, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
        logger.debug("recorded LLM fixture %s", path)
        return response
