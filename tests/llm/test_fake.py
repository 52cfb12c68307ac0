"""Tests for toolemu.llm.fake: scripted, callable and replay modes, and RecordingModel."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from toolemu.core.errors import FixtureMissingError, LLMBackendError
from toolemu.core.types import Message
from toolemu.llm.backend import ChatModel, ChatResponse, SamplingParams
from toolemu.llm.fake import FakeLLM, RecordingModel
from toolemu.llm.request import ChatRequest

HI = [Message(role="user", content="hi")]


def test_fake_llm_scripted_returns_replies_in_order_and_records_requests() -> None:
    llm = FakeLLM(["one", "two"])
    params = SamplingParams(seed=3)
    assert isinstance(llm, ChatModel)
    assert llm.chat(HI).text == "one"
    assert llm.chat([*HI, Message(role="assistant", content="one")], params).text == "two"
    assert llm.remaining == 0
    assert [len(r.messages) for r in llm.requests] == [1, 2]
    assert llm.requests[0].params == SamplingParams()
    assert llm.requests[1].params.seed == 3


def test_fake_llm_scripted_raises_clear_error_when_script_runs_out() -> None:
    llm = FakeLLM(["only"], name="agent-fake")
    llm.chat(HI)
    with pytest.raises(
        LLMBackendError, match=re.escape("`agent-fake` ran out of scripted replies at request 2")
    ):
        llm.chat(HI)


def test_fake_llm_scripted_exception_is_raised_in_turn() -> None:
    err = LLMBackendError("boom", status_code=500, retryable=True)
    llm = FakeLLM(["a", err, "b"])
    assert llm.chat(HI).text == "a"
    with pytest.raises(LLMBackendError) as info:
        llm.chat(HI)
    assert info.value is err
    assert llm.chat(HI).text == "b"


def test_fake_llm_scripted_response_objects_pass_through() -> None:
    response = ChatResponse(text="x", model="m", finish_reason="length", completion_tokens=5)
    assert FakeLLM([response]).chat(HI) is response


def test_fake_llm_cuts_text_at_stop_string_like_a_real_backend() -> None:
    llm = FakeLLM(["Action: Ls\nObservation: invented", "no stop here"])
    params = SamplingParams(stop=("\nObservation:",))
    assert llm.chat(HI, params).text == "Action: Ls"
    assert llm.chat(HI, params).text == "no stop here"


def test_fake_llm_from_function_sees_messages_and_params() -> None:
    def reply(messages: tuple[Message, ...], params: SamplingParams) -> str:
        return f"{messages[-1].content}:{params.temperature}"

    llm = FakeLLM.from_function(reply)
    assert llm.chat(HI, SamplingParams(temperature=0.5)).text == "hi:0.5"
    assert llm.chat(HI).text == "hi:0.0"
    assert len(llm.requests) == 2


def test_fake_llm_constant_always_answers_the_same() -> None:
    llm = FakeLLM.constant("yes")
    assert [llm.chat(HI).text for _ in range(3)] == ["yes"] * 3
    assert "always answers 'yes'" in llm.describe()


def test_fake_llm_is_deterministic_across_instances() -> None:
    def run() -> list[ChatResponse]:
        llm = FakeLLM(["a\nObservation: x", "b", "c"])
        return [llm.chat(HI, SamplingParams(seed=s, stop=("\nObservation:",))) for s in range(3)]

    first, second = run(), run()
    assert first == second
    assert [r.text for r in first] == ["a", "b", "c"]


def test_recording_model_then_replay_round_trips(tmp_path: Path) -> None:
    inner = FakeLLM(["recorded answer"], name="real-model")
    recorder = RecordingModel(inner, tmp_path)
    params = SamplingParams(seed=1, json_schema={"type": "object"})
    first = recorder.chat(HI, params)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1
    record = json.loads(files[0].read_text())
    assert files[0].stem == ChatRequest.of(HI, params).key() == record["key"]
    assert record["request"]["messages"] == [{"role": "user", "content": "hi"}]
    assert record["response"]["text"] == "recorded answer"

    replay = FakeLLM.replay(tmp_path)
    again = replay.chat(HI, params)
    assert again == first
    assert replay.requests == [ChatRequest.of(HI, params)]


def test_fake_llm_replay_key_is_model_independent(tmp_path: Path) -> None:
    RecordingModel(FakeLLM(["from A"], name="model-a"), tmp_path).chat(HI)
    assert FakeLLM.replay(tmp_path, name="model-b").chat(HI).text == "from A"


def test_fake_llm_replay_miss_names_key_and_record_command(tmp_path: Path) -> None:
    RecordingModel(FakeLLM(["a"]), tmp_path).chat(HI)
    replay = FakeLLM.replay(tmp_path)
    other = [Message(role="user", content="something else")]
    key = ChatRequest.of(other).key()
    with pytest.raises(FixtureMissingError) as info:
        replay.chat(other)
    message = str(info.value)
    assert key in message
    assert "pytest --record-llm --record-llm-model" in message
    assert str(tmp_path / f"{key}.json") in message
    # A different param is a different request, so it misses as well.
    with pytest.raises(FixtureMissingError):
        replay.chat(HI, SamplingParams(seed=7))


def test_fake_llm_replay_rejects_corrupt_fixture(tmp_path: Path) -> None:
    (tmp_path / f"{ChatRequest.of(HI).key()}.json").write_text("{not json")
    with pytest.raises(LLMBackendError, match="is not a valid recording") as info:
        FakeLLM.replay(tmp_path).chat(HI)
    assert not isinstance(info.value, FixtureMissingError)


def test_recording_model_records_nothing_when_inner_fails(tmp_path: Path) -> None:
    recorder = RecordingModel(FakeLLM([LLMBackendError("down", retryable=True)]), tmp_path)
    with pytest.raises(LLMBackendError, match="down"):
        recorder.chat(HI)
    assert list(tmp_path.iterdir()) == []


def test_chat_request_key_depends_on_every_param() -> None:
    base = ChatRequest.of(HI).key()
    variants = [
        SamplingParams(temperature=0.1),
        SamplingParams(top_p=0.9),
        SamplingParams(max_tokens=5),
        SamplingParams(stop=("x",)),
        SamplingParams(seed=0),
        SamplingParams(json_schema={"type": "object"}),
    ]
    keys = {ChatRequest.of(HI, p).key() for p in variants}
    assert base not in keys and len(keys) == len(variants)
    assert ChatRequest.of(HI).key(model="m") != base
