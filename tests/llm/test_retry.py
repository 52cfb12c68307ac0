"""Tests for toolemu.llm.retry."""

from __future__ import annotations

import logging

import pytest
from pydantic import ValidationError

from toolemu.core.errors import LLMBackendError, MalformedResponseError
from toolemu.llm.retry import RetryPolicy, call_with_retries, count_retries


class Flaky:
    """Fails with the given errors in order, then returns "done"."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def retryable(status: int = 503) -> LLMBackendError:
    return LLMBackendError(f"HTTP {status}", status_code=status, retryable=True)


def test_call_with_retries_returns_after_retryable_failures(caplog: pytest.LogCaptureFixture) -> None:
    waits: list[float] = []
    fn = Flaky(retryable(429), retryable(500))
    with caplog.at_level(logging.WARNING, logger="toolemu.llm.retry"):
        result = call_with_retries(fn, RetryPolicy(base_delay=0.1, jitter=0.0), sleep=waits.append)
    assert result == "done"
    assert fn.calls == 3
    assert waits == [0.1, 0.2]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "attempt 1/6" in warnings[0].getMessage() and "status 429" in warnings[0].getMessage()


def test_call_with_retries_reraises_last_error_when_attempts_run_out() -> None:
    waits: list[float] = []
    errors = [retryable(500), retryable(502), retryable(503)]
    fn = Flaky(*errors)
    with pytest.raises(LLMBackendError) as info:
        call_with_retries(fn, RetryPolicy(max_attempts=3, base_delay=0.01, jitter=0.0), sleep=waits.append)
    assert info.value is errors[2]
    assert fn.calls == 3
    assert waits == [0.01, 0.02]


def test_call_with_retries_does_not_retry_non_retryable() -> None:
    waits: list[float] = []
    bad_request = LLMBackendError("HTTP 400", status_code=400, retryable=False)
    fn = Flaky(bad_request)
    with pytest.raises(LLMBackendError) as info:
        call_with_retries(fn, RetryPolicy(), sleep=waits.append)
    assert info.value is bad_request
    assert fn.calls == 1
    assert waits == []


def test_call_with_retries_does_not_retry_other_exceptions() -> None:
    fn = Flaky(ValueError("bug"))
    with pytest.raises(ValueError, match="bug"):
        call_with_retries(fn, RetryPolicy(), sleep=lambda s: None)
    assert fn.calls == 1


def test_call_with_retries_single_attempt_policy_never_sleeps() -> None:
    waits: list[float] = []
    fn = Flaky(retryable())
    with pytest.raises(LLMBackendError):
        call_with_retries(fn, RetryPolicy(max_attempts=1), sleep=waits.append)
    assert fn.calls == 1 and waits == []


def test_retry_policy_delay_grows_exponentially_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [policy.delay(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_retry_policy_delay_jitter_stays_in_band() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=100.0, jitter=0.5)
    delays = [policy.delay(2) for _ in range(200)]
    assert all(1.0 <= d <= 3.0 for d in delays)
    assert len(set(delays)) > 1


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"base_delay": -1.0}, {"jitter": 1.5}, {"base_delay": 5.0, "max_delay": 1.0}],
    ids=["zero-attempts", "negative-delay", "jitter-over-1", "max-below-base"],
)
def test_retry_policy_rejects_invalid_values(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_count_retries_counts_each_retry_by_reason_in_its_own_context() -> None:
    with count_retries() as outer:
        call_with_retries(Flaky(retryable(429), retryable(429)), RetryPolicy(), sleep=lambda s: None)
        with count_retries() as inner:
            call_with_retries(Flaky(MalformedResponseError("cut", retryable=True)), RetryPolicy(),
                              sleep=lambda s: None)
        with pytest.raises(LLMBackendError):
            call_with_retries(Flaky(*[retryable(503)] * 2), RetryPolicy(max_attempts=2), sleep=lambda s: None)
    assert dict(inner) == {"malformed body": 1}
    assert dict(outer) == {"HTTP 429": 2, "HTTP 503": 1}  # the attempt that failed for good is no retry
    call_with_retries(Flaky(retryable(429)), RetryPolicy(), sleep=lambda s: None)  # no counter open: fine
