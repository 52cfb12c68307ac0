"""``OpenAICompatModel``: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

Uses the ``openai`` client with its own retries off; retries happen in ``toolemu.llm.retry``.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from typing import Self

import httpx2
import openai

from toolemu.core.errors import (
    ConfigError,
    EndpointTimeoutError,
    EndpointUnreachableError,
    LLMBackendError,
    MalformedResponseError,
)
from toolemu.core.types import Message
from toolemu.llm.backend import ChatResponse, SamplingParams
from toolemu.llm.http_transport import ThreadConnectionTransport, lean_transport_applies
from toolemu.llm.retry import RetryPolicy, call_with_retries

logger = logging.getLogger(__name__)

BASE_URL_ENV = ("TOOLEMU_BASE_URL", "OPENAI_BASE_URL")
"""Environment variables read, in order, when no base URL is passed."""
API_KEY_ENV = ("TOOLEMU_API_KEY", "OPENAI_API_KEY")
"""Environment variables read, in order, when no API key is passed."""
PLACEHOLDER_API_KEY = "no-key-needed"
"""Sent to a server given by base URL when no key is configured; local servers ignore the key."""
MISSING_KEY_MESSAGE = (
    "No API key for the OpenAI-compatible backend. Pass --api-key or set OPENAI_API_KEY "
    "(or TOOLEMU_API_KEY), or pass --base-url (or set OPENAI_BASE_URL) to use a local server "
    "such as vLLM, Ollama or llama.cpp server"
)

_RETRYABLE_STATUS = frozenset({408, 429})
DEFAULT_MAX_CONNECTIONS = 64
"""Connections a model keeps open to its endpoint when the caller does not say how many calls run at once."""


def env_value(names: Sequence[str]) -> str | None:
    """Returns the first non-empty value among the environment variables ``names``."""
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth retrying: 408, 429 and every 5xx."""
    return status in _RETRYABLE_STATUS or status >= 500


def _redact(text: str, secret: str) -> str:
    """Returns ``text`` with ``secret`` (and its long prefixes that providers echo back) masked."""
    if secret and secret != PLACEHOLDER_API_KEY:
        text = text.replace(secret, "[REDACTED]")
        if len(secret) > 12:
            text = text.replace(secret[:8], "[REDACTED]")
    return text


def _to_openai_message(message: Message) -> dict[str, str]:
    # Tools here are text protocols (ReAct), not native function calls, so a "tool" message has no
    # tool_call_id for the API to match; it is sent as the user turn that carries the observation.
    role = "user" if message.role == "tool" else message.role
    return {"role": role, "content": message.content}


class OpenAICompatModel:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        model: The model name the server knows (``gpt-4o-mini``, ``Qwen/Qwen2.5-7B-Instruct``).
        base_url: Endpoint root (``http://localhost:8000/v1``); else ``TOOLEMU_BASE_URL`` or
            ``OPENAI_BASE_URL``; else OpenAI.
        api_key: Secret; else ``TOOLEMU_API_KEY`` or ``OPENAI_API_KEY``; else a placeholder when a base URL is
            set (local servers ignore it).
        timeout: Seconds allowed per HTTP attempt.
        retry: Retry policy for retryable failures (429, 5xx, timeouts, connection errors, bodies that are not
            a chat completion).
        max_connections: Calls sent at once, each on a kept-alive connection: at least the number of calls in
            flight (``bench --concurrency``), else calls queue. A plain-HTTP endpoint reached without a proxy
            gets one connection per calling thread and no shared pool (``toolemu.llm.http_transport``).

    Raises:
        ConfigError: neither an API key nor a base URL is configured, ``model`` is empty, or ``timeout`` or
            ``max_connections`` is not positive.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        if not model.strip():
            raise ConfigError("OpenAI-compatible model name is empty; pass a model such as `gpt-4o-mini`")
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive seconds, got {timeout}")
        if max_connections < 1:
            raise ConfigError(f"max_connections must be at least 1, got {max_connections}")
        self._model = model
        self._base_url = base_url or env_value(BASE_URL_ENV)
        key = api_key or env_value(API_KEY_ENV)
        if key is None:
            if self._base_url is None:
                raise ConfigError(MISSING_KEY_MESSAGE)
            key = PLACEHOLDER_API_KEY
        self._api_key = key
        self._timeout = timeout
        self._retry = retry if retry is not None else RetryPolicy()
        if self._base_url is not None and lean_transport_applies(self._base_url):
            # A plain-HTTP server reached directly: a keep-alive connection per calling thread, no shared pool.
            http_client = openai.DefaultHttpxClient(transport=ThreadConnectionTransport(max_connections))
        else:
            # The client's default pool keeps only 100 idle connections: past that, every call opens a new one.
            limits = httpx2.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
            http_client = openai.DefaultHttpxClient(limits=limits)
        self._client = openai.OpenAI(
            api_key=key, base_url=self._base_url, timeout=timeout, max_retries=0, http_client=http_client
        )
        self._max_connections = max_connections
        self._endpoint = str(self._client.base_url).rstrip("/")  # rendering the URL costs ~0.5 ms; done once

    @property
    def name(self) -> str:
        """``openai:<model>``."""
        return f"openai:{self._model}"

    @property
    def model(self) -> str:
        """The model name sent to the server."""
        return self._model

    @property
    def max_connections(self) -> int:
        """Size of the connection pool to the endpoint."""
        return self._max_connections

    @property
    def base_url(self) -> str:
        """The endpoint in use."""
        return self._endpoint

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        """Returns ``self``: a model is a shared handle (``gym.make`` deep-copies env kwargs)."""
        return self

    def describe(self) -> str:
        """Returns a one-line description for the CLI (never includes the key)."""
        return f"OpenAI-compatible model `{self._model}` at {self.base_url}"

    def __repr__(self) -> str:
        return f"OpenAICompatModel(model={self._model!r}, base_url={self.base_url!r})"

    def request_kwargs(self, messages: Sequence[Message], params: SamplingParams) -> dict[str, object]:
        """Returns the JSON body POSTed to ``/chat/completions`` for this request."""
        kwargs: dict[str, object] = {
            "model": self._model,
            "messages": [_to_openai_message(m) for m in messages],
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
        }
        if params.stop:
            kwargs["stop"] = list(params.stop)
        if params.seed is not None:
            kwargs["seed"] = params.seed
        if params.json_schema is not None:
            title = params.json_schema.get("title")
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": title if isinstance(title, str) and title.isidentifier() else "response",
                    "schema": params.json_schema,
                    "strict": True,
                },
            }
        return kwargs

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatResponse:
        """Returns one reply, retrying retryable failures per the retry policy.

        Raises:
            LLMBackendError: the request failed (after retries, when retryable), or the server's answer had no
                usable content. ``status_code``, ``retryable`` and ``request_id`` are set where known.
            ConfigError: ``messages`` is empty.
        """
        if not messages:
            raise ConfigError("chat() needs at least one message")
        kwargs = self.request_kwargs(messages, params if params is not None else SamplingParams())
        return call_with_retries(lambda: self._call_once(kwargs, len(messages)), self._retry, what=self.name)

    def _call_once(self, kwargs: dict[str, object], n_messages: int) -> ChatResponse:
        start = time.perf_counter()
        try:
            # The client's own POST, minus the per-call walk of the parameter types that ``create`` does and the
            # building of response objects (together about half the CPU of a call); ``kwargs`` is plain JSON
            # already and the body is read as JSON below. Error statuses still raise ``openai`` errors.
            raw = self._client.post("/chat/completions", body=kwargs, cast_to=httpx2.Response)
        except openai.APIError as err:
            raise self._typed_error(err) from err
        response = self._parse(raw)
        logger.debug(
            "%s: %d messages (%s prompt tokens) -> %s tokens in %.2fs (finish %s)",
            self.name,
            n_messages,
            response.prompt_tokens,
            response.completion_tokens,
            time.perf_counter() - start,
            response.finish_reason,
        )
        return response

    def _parse(self, raw: httpx2.Response) -> ChatResponse:
        # Nothing in the body is trusted: a server that sends the wrong shape gets each field used checked.
        # A body that is no chat completion (an HTML page from a proxy, JSON cut short, no choices) is a transient
        # gateway failure and retryable; a well-formed completion without text (a refusal) is the model's answer.
        where = f"{self.name} at {self.base_url}"
        request_id = raw.headers.get("x-request-id")
        try:
            completion = json.loads(raw.content)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            shown = raw.content[:200].decode("utf-8", "replace")
            raise MalformedResponseError(
                f"{where} returned an unparseable body (not JSON: {err}): {shown!r}",
                retryable=True,
                request_id=request_id,
            ) from err
        if not isinstance(completion, dict) or not isinstance(completion.get("choices", []), list):
            raise MalformedResponseError(
                f"{where} returned an unparseable body (not a chat completion): {str(completion)[:200]!r}",
                retryable=True,
                request_id=request_id,
            )
        choices = completion.get("choices")
        if not choices:
            raise MalformedResponseError(
                f"{where} returned a response with no choices (choices={choices!r:.80})",
                retryable=True,
                request_id=request_id,
            )
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message")
        finish_reason = choice.get("finish_reason")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not isinstance(content, str | None):
            raise MalformedResponseError(
                f"{where} returned a choice that is not a chat message (message={message!r:.80})",
                retryable=True,
                request_id=request_id,
            )
        if content is None:
            refusal = message.get("refusal")
            detail = f"a refusal: {refusal!r}" if refusal else f"no message content (content={content!r:.80})"
            raise LLMBackendError(
                f"{where} returned {detail} (finish_reason {finish_reason})", request_id=request_id
            )
        usage = completion.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
        model = completion.get("model")
        return ChatResponse(
            text=content,
            model=model if isinstance(model, str) and model else self._model,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else None,
            completion_tokens=completion_tokens if isinstance(completion_tokens, int) else None,
        )

    def _typed_error(self, err: openai.APIError) -> LLMBackendError:
        where = f"{self.name} at {self.base_url}"
        if isinstance(err, openai.APITimeoutError):
            return EndpointTimeoutError(f"{where} timed out after {self._timeout}s", retryable=True)
        if isinstance(err, openai.APIConnectionError):
            cause = err.__cause__ or err
            message = _redact(str(cause), self._api_key)
            return EndpointUnreachableError(f"{where} could not be reached: {message}", retryable=True)
        if isinstance(err, openai.APIStatusError):
            status = err.status_code
            body = err.body
            detail = body.get("message") if isinstance(body, dict) else None
            message = _redact(str(detail if detail else err.message), self._api_key)
            return LLMBackendError(
                f"{where} answered HTTP {status}: {message}",
                status_code=status,
                retryable=is_retryable_status(status),
                request_id=err.request_id,
            )
        # APIResponseValidationError and any other client-side failure to read the response.
        message = _redact(str(err.message), self._api_key)
        return MalformedResponseError(f"{where} returned an unparseable body: {message}", retryable=True)
