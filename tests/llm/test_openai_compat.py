"""Tests for toolemu.llm.openai_compat through the real openai client against a local HTTP server."""

from __future__ import annotations

import contextlib
import logging
import re
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.fakes.chat_server import HTML_ERROR_PAGE, FakeChatServer, RecordedRequest, ScriptedReply
from toolemu.core.errors import (
    ConfigError,
    EndpointTimeoutError,
    EndpointUnreachableError,
    LLMBackendError,
    MalformedResponseError,
)
from toolemu.core.types import Message
from toolemu.llm.backend import SamplingParams
from toolemu.llm.openai_compat import MISSING_KEY_MESSAGE, PLACEHOLDER_API_KEY, OpenAICompatModel
from toolemu.llm.retry import RetryPolicy, count_retries

FAST = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.01, jitter=0.0)
HI = [Message(role="system", content="be brief"), Message(role="user", content="hi")]
KEY = "sk-test-abcdefghijklmnop"

pytestmark = pytest.mark.enable_socket


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TOOLEMU_BASE_URL", "OPENAI_BASE_URL", "TOOLEMU_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def make_model(server: FakeChatServer, **kwargs: object) -> OpenAICompatModel:
    options: dict[str, object] = {"base_url": server.base_url, "api_key": KEY, "retry": FAST, "timeout": 5.0}
    options.update(kwargs)
    return OpenAICompatModel("test-model", **options)  # type: ignore[arg-type]


def test_openai_compat_success_maps_response_and_request(chat_server: FakeChatServer) -> None:
    chat_server.push("Final Answer: hello there")
    model = make_model(chat_server)
    params = SamplingParams(temperature=0.2, top_p=0.9, max_tokens=64, stop=("\nObservation:",), seed=11)
    response = model.chat(HI, params)
    assert response.text == "Final Answer: hello there"
    assert response.finish_reason == "stop"
    assert response.model == "fake-server-model"
    assert (response.prompt_tokens, response.completion_tokens) == (7, 4)
    assert response.cached is False
    (request,) = chat_server.chat_requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert body["model"] == "test-model"
    assert body["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (0.2, 0.9, 64, 11)
    assert body["stop"] == ["\nObservation:"]
    assert "response_format" not in body


def test_openai_compat_sends_json_schema_as_response_format(chat_server: FakeChatServer) -> None:
    schema = {
        "title": "verdict",
        "type": "object",
        "properties": {"score": {"type": "integer"}},
        "required": ["score"],
        "additionalProperties": False,
    }
    chat_server.push('{"score": 3}')
    make_model(chat_server).chat(HI, SamplingParams(json_schema=schema))
    assert chat_server.chat_requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": schema, "strict": True},
    }


def test_openai_compat_retries_429_then_succeeds(
    chat_server: FakeChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    chat_server.push(ScriptedReply(status=429, error_message="slow down"), "after retry")
    with caplog.at_level(logging.WARNING, logger="toolemu.llm.retry"):
        response = make_model(chat_server).chat(HI)
    assert response.text == "after retry"
    assert len(chat_server.chat_requests) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "status 429" in warnings[0] and "openai:test-model" in warnings[0]


def test_openai_compat_5xx_until_retries_run_out(chat_server: FakeChatServer) -> None:
    chat_server.push(*[ScriptedReply(status=500, error_message="overloaded")] * 3)
    with pytest.raises(LLMBackendError) as info:
        make_model(chat_server).chat(HI)
    err = info.value
    assert err.status_code == 500
    assert err.retryable is True
    assert err.request_id == "req-fake-3"
    assert "HTTP 500" in str(err) and "overloaded" in str(err)
    assert len(chat_server.chat_requests) == FAST.max_attempts


def test_openai_compat_400_is_not_retried(chat_server: FakeChatServer) -> None:
    chat_server.push(ScriptedReply(status=400, error_message="bad schema"), "never sent")
    with pytest.raises(LLMBackendError, match="HTTP 400: bad schema") as info:
        make_model(chat_server).chat(HI)
    assert info.value.status_code == 400
    assert info.value.retryable is False
    assert len(chat_server.chat_requests) == 1


MALFORMED = [
    ScriptedReply(body=b"{this is not json"),
    ScriptedReply(body=b'{"id": "chatcmpl-1", "object": "chat.comp'),
    ScriptedReply(body=HTML_ERROR_PAGE, content_type="text/html"),
    ScriptedReply(body=b'{"unexpected": true}'),
    ScriptedReply(body=b'{"choices": "x"}'),
    ScriptedReply(body=b'{"choices": [{"message": {"content": 5}}]}'),
    ScriptedReply(no_choices=True),
]
MALFORMED_IDS = ["broken-json", "cut-json", "html", "wrong-shape", "choices-not-list", "content-not-text",
                 "no-choices"]


@pytest.mark.parametrize("reply", MALFORMED, ids=MALFORMED_IDS)
def test_openai_compat_malformed_body_is_retried_then_succeeds(
    chat_server: FakeChatServer, reply: ScriptedReply
) -> None:
    chat_server.push(reply, "after retry")
    with count_retries() as retries:
        assert make_model(chat_server).chat(HI).text == "after retry"
    assert len(chat_server.chat_requests) == 2
    assert dict(retries) == {"malformed body": 1}


@pytest.mark.parametrize("reply", MALFORMED, ids=MALFORMED_IDS)
def test_openai_compat_malformed_body_until_retries_run_out_is_typed_error(
    chat_server: FakeChatServer, reply: ScriptedReply
) -> None:
    chat_server.push(*[reply] * FAST.max_attempts, "never sent")
    with pytest.raises(MalformedResponseError) as info:
        make_model(chat_server).chat(HI)
    assert info.value.retryable is True
    assert "openai:test-model" in str(info.value)
    assert len(chat_server.chat_requests) == FAST.max_attempts


def test_openai_compat_null_content_is_not_retried(chat_server: FakeChatServer) -> None:
    chat_server.push(ScriptedReply(null_content=True), "never sent")
    with pytest.raises(LLMBackendError, match="no message content") as info:
        make_model(chat_server).chat(HI)
    assert info.value.retryable is False
    assert not isinstance(info.value, MalformedResponseError)
    assert len(chat_server.chat_requests) == 1


def test_openai_compat_retries_are_counted_by_reason(chat_server: FakeChatServer) -> None:
    chat_server.push(
        ScriptedReply(status=429), ScriptedReply(status=503), ScriptedReply(no_choices=True), "ok", "again"
    )
    model = make_model(chat_server, retry=RetryPolicy(max_attempts=4, base_delay=0.0, jitter=0.0))
    with count_retries() as retries:
        model.chat(HI)
        model.chat(HI)
    assert dict(retries) == {"HTTP 429": 1, "HTTP 503": 1, "malformed body": 1}


def test_openai_compat_pool_holds_max_connections_calls_at_once() -> None:
    lock = threading.Lock()
    in_flight = [0, 0]  # now, most at once
    arrived = threading.Barrier(4, timeout=0.5)

    def respond(request: RecordedRequest) -> ScriptedReply:
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight)
        with contextlib.suppress(threading.BrokenBarrierError):
            arrived.wait()  # returns once 4 calls are in the server, or after 0.5 s with fewer
        with lock:
            in_flight[0] -= 1
        return ScriptedReply("ok")

    for pool, expected in ((2, 2), (4, 4)):
        arrived.reset()
        in_flight[1] = 0
        with FakeChatServer(default=respond) as server:
            model = make_model(server, max_connections=pool)
            assert model.max_connections == pool
            with ThreadPoolExecutor(4) as threads:
                replies = list(threads.map(lambda _, m=model: m.chat(HI).text, range(4)))
            assert replies == ["ok"] * 4
        assert in_flight[1] == expected


def test_openai_compat_max_connections_must_be_positive(chat_server: FakeChatServer) -> None:
    with pytest.raises(ConfigError, match="max_connections must be at least 1, got 0"):
        make_model(chat_server, max_connections=0)


def test_openai_compat_timeout_is_retryable(chat_server: FakeChatServer) -> None:
    chat_server.push(ScriptedReply(delay=1.0), "fast")
    model = make_model(chat_server, timeout=0.2)
    assert model.chat(HI).text == "fast"
    assert len(chat_server.chat_requests) == 2


def test_openai_compat_timeout_until_retries_run_out(chat_server: FakeChatServer) -> None:
    chat_server.push(ScriptedReply(delay=0.6), ScriptedReply(delay=0.6))
    model = make_model(
        chat_server, timeout=0.15, retry=RetryPolicy(max_attempts=2, base_delay=0.0, jitter=0.0)
    )
    with pytest.raises(EndpointTimeoutError, match=re.escape("timed out after 0.15s")) as info:
        model.chat(HI)
    assert info.value.retryable is True and info.value.status_code is None


def test_openai_compat_connection_refused_is_retryable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAICompatModel("m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, retry=FAST)
    with pytest.raises(EndpointUnreachableError, match="could not be reached") as info:
        model.chat(HI)
    assert info.value.retryable is True


def test_openai_compat_base_url_without_key_sends_placeholder(chat_server: FakeChatServer) -> None:
    chat_server.push("ok")
    OpenAICompatModel("local", base_url=chat_server.base_url, retry=FAST).chat(HI)
    assert chat_server.chat_requests[0].headers["authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"


def test_openai_compat_reads_env_configuration(
    chat_server: FakeChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("TOOLEMU_BASE_URL", chat_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key")
    chat_server.push("from env")
    assert OpenAICompatModel("m", retry=FAST).chat(HI).text == "from env"
    assert chat_server.chat_requests[0].headers["authorization"] == "Bearer sk-env-key"


def test_openai_compat_missing_key_and_base_url_is_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        OpenAICompatModel("gpt-4o-mini")
    assert str(info.value) == MISSING_KEY_MESSAGE


def test_openai_compat_never_logs_the_key(
    chat_server: FakeChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    chat_server.push(
        ScriptedReply(status=503, error_message=f"upstream rejected key {KEY}"),
        ScriptedReply(status=401, error_message=f"Incorrect API key provided: {KEY}"),
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMBackendError) as info:
        make_model(chat_server).chat(HI)
    assert info.value.status_code == 401
    assert KEY not in str(info.value) and "[REDACTED]" in str(info.value)
    assert KEY not in caplog.text and KEY[:8] not in caplog.text


def test_openai_compat_logs_debug_per_call(
    chat_server: FakeChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    chat_server.push("a", "b")
    model = make_model(chat_server)
    with caplog.at_level(logging.DEBUG, logger="toolemu.llm.openai_compat"):
        model.chat(HI)
        model.chat(HI)
    debug = [
        r for r in caplog.records if r.name == "toolemu.llm.openai_compat" and r.levelno == logging.DEBUG
    ]
    assert len(debug) == 2
    assert "openai:test-model" in debug[0].getMessage()


def test_openai_compat_tool_role_is_sent_as_user_turn(chat_server: FakeChatServer) -> None:
    chat_server.push("ok")
    make_model(chat_server).chat([*HI, Message(role="tool", content='{"files": []}')])
    assert chat_server.chat_requests[0].body["messages"][-1] == {"role": "user", "content": '{"files": []}'}


def test_chat_server_default_reply_and_exhausted_script() -> None:
    with FakeChatServer(
        ["first"], default=lambda request: ScriptedReply(f"echo {request.body['model']}")
    ) as server:
        model = make_model(server)
        assert [model.chat(HI).text for _ in range(2)] == ["first", "echo test-model"]
    with FakeChatServer() as server, pytest.raises(LLMBackendError, match="script exhausted at request 1"):
        make_model(server).chat(HI)
