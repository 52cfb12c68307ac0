"""Bounded retries with exponential backoff for model calls; the only place in toolemu that retries.

Only an ``LLMBackendError`` with ``retryable=True`` (429, 5xx, timeouts, connection errors, bodies that are not
a chat completion) is retried. Every retry is counted, by reason, in the counter ``count_retries`` opened in
the calling context (the bench opens one per episode and stores it in the episode's record).
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from pydantic import Field, model_validator

from toolemu.core.errors import (
    EndpointTimeoutError,
    EndpointUnreachableError,
    LLMBackendError,
    MalformedResponseError,
)
from toolemu.core.types import Frozen

logger = logging.getLogger(__name__)

T = TypeVar("T")


class RetryPolicy(Frozen):
    """How often and how patiently to retry a retryable model error.

    The delay before retry ``n`` (1-based) is ``min(max_delay, base_delay * 2 ** (n - 1))``, scaled by a
    random factor in ``[1 - jitter, 1 + jitter]`` and capped again at ``max_delay``.

    Examples:
        >>> RetryPolicy(jitter=0.0).delay(3)
        2.0
        >>> RetryPolicy(base_delay=1.0, max_delay=3.0, jitter=0.0).delay(5)
        3.0
    """

    max_attempts: int = Field(default=6, ge=1)
    """Total attempts, the first call included; 1 disables retries. Six keep a call that fails one time in five
    (a gateway under load) failing for good about once in 15,000."""
    base_delay: float = Field(default=0.5, ge=0.0)
    """Seconds to wait before the first retry."""
    max_delay: float = Field(default=20.0, ge=0.0)
    """Upper bound on any single wait, in seconds."""
    jitter: float = Field(default=0.25, ge=0.0, le=1.0)
    """Relative random spread of each wait, so concurrent callers do not retry in lockstep."""

    @model_validator(mode="after")
    def _check_delays(self) -> RetryPolicy:
        if self.max_delay < self.base_delay:
            raise ValueError(
                f"max_delay ({self.max_delay}) must be >= base_delay ({self.base_delay}); "
                "raise max_delay or lower base_delay"
            )
        return self

    def delay(self, retry: int) -> float:
        """Returns the seconds to wait before retry number ``retry`` (1-based)."""
        if retry < 1:
            raise ValueError(f"retry number must be >= 1, got {retry}")
        base = min(self.max_delay, self.base_delay * 2.0 ** (retry - 1))
        spread = 1.0 + self.jitter * random.uniform(-1.0, 1.0) if self.jitter else 1.0
        return min(self.max_delay, base * spread)


_RETRIES: ContextVar[Counter[str] | None] = ContextVar("toolemu_retries", default=None)


@contextmanager
def count_retries() -> Iterator[Counter[str]]:
    """Counts, by ``retry_reason``, the retries made by ``call_with_retries`` in this context (this thread).

    Examples:
        >>> with count_retries() as retries:
        ...     pass
        >>> dict(retries)
        {}
    """
    retries: Counter[str] = Counter()
    token = _RETRIES.set(retries)
    try:
        yield retries
    finally:
        _RETRIES.reset(token)


def retry_reason(err: LLMBackendError) -> str:
    """Names why a call failed, for retry counts: ``HTTP 429``, ``timeout``, ``unreachable``, ``malformed body``.

    Examples:
        >>> retry_reason(LLMBackendError("x", status_code=503))
        'HTTP 503'
        >>> retry_reason(MalformedResponseError("x"))
        'malformed body'
    """
    if err.status_code is not None:
        return f"HTTP {err.status_code}"
    if isinstance(err, MalformedResponseError):
        return "malformed body"
    if isinstance(err, EndpointTimeoutError):
        return "timeout"
    if isinstance(err, EndpointUnreachableError):
        return "unreachable"
    return type(err).__name__


def call_with_retries(
    fn: Callable[[], T],
    policy: RetryPolicy,
    *,
    what: str = "model call",
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Calls ``fn`` until it succeeds, retrying retryable ``LLMBackendError`` s with backoff.

    Args:
        fn: The call to make; it raises ``LLMBackendError`` on failure.
        policy: Attempt budget and backoff.
        what: Names the call in WARNING log lines (``"openai:gpt-4o-mini"``).
        sleep: Waits the given seconds; tests pass a recorder instead of ``time.sleep``.

    Returns:
        Whatever ``fn`` returns on its first successful attempt.

    Raises:
        LLMBackendError: at once when it is not retryable; otherwise the last error once ``max_attempts``
            attempts have failed. Any other exception propagates unchanged and is never retried.
    """
    attempt = 1
    while True:
        try:
            return fn()
        except LLMBackendError as err:
            if not err.retryable or attempt >= policy.max_attempts:
                if err.retryable:
                    logger.warning("%s failed after %d attempt(s): %s", what, attempt, err)
                raise
            wait = policy.delay(attempt)
            retries = _RETRIES.get()
            if retries is not None:
                retries[retry_reason(err)] += 1
            logger.warning(
                "%s failed (attempt %d/%d, status %s): %s; retrying in %.2fs",
                what,
                attempt,
                policy.max_attempts,
                err.status_code if err.status_code is not None else "n/a",
                err,
                wait,
            )
            sleep(wait)
            attempt += 1
