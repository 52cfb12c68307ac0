"""Tests for toolemu.llm.cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from toolemu.core.errors import LLMBackendError
from toolemu.core.types import Message
from toolemu.llm.backend import SamplingParams
from toolemu.llm.cache import CachedModel
from toolemu.llm.fake import FakeLLM

HI = [Message(role="user", content="hi")]


def counting_model(name: str = "counter") -> FakeLLM:
    """Answers "reply <n>" where n counts the calls, so a cache hit is visible."""
    calls = {"n": 0}

    def reply(messages: tuple[Message, ...], params: SamplingParams) -> str:
        calls["n"] += 1
        return f"reply {calls['n']}"

    return FakeLLM.from_function(reply, name=name)


def test_cached_model_miss_then_hit(tmp_path: Path) -> None:
    inner = counting_model()
    model = CachedModel(inner, tmp_path)
    first = model.chat(HI)
    second = model.chat(HI)
    assert first.text == second.text == "reply 1"
    assert first.cached is False and second.cached is True
    assert len(inner.requests) == 1
    assert (model.hits, model.misses) == (1, 1)
    assert model.name == "counter"


def test_cached_model_persists_across_instances(tmp_path: Path) -> None:
    CachedModel(counting_model(), tmp_path).chat(HI)
    fresh_inner = counting_model()
    again = CachedModel(fresh_inner, tmp_path).chat(HI)
    assert again.text == "reply 1" and again.cached
    assert fresh_inner.requests == []


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(seed=1),
        SamplingParams(temperature=0.3, seed=2),
        SamplingParams(top_p=0.5),
        SamplingParams(max_tokens=7),
        SamplingParams(stop=("Observation:",)),
        SamplingParams(json_schema={"type": "object"}),
    ],
    ids=["seed", "temperature", "top_p", "max_tokens", "stop", "json_schema"],
)
def test_cached_model_key_is_sensitive_to_params(tmp_path: Path, params: SamplingParams) -> None:
    model = CachedModel(counting_model(), tmp_path)
    assert model.chat(HI).text == "reply 1"
    other = model.chat(HI, params)
    assert other.text == "reply 2" and not other.cached
    assert model.key(HI) != model.key(HI, params)


def test_cached_model_key_is_sensitive_to_model_name_and_messages(tmp_path: Path) -> None:
    a = CachedModel(counting_model("model-a"), tmp_path)
    b = CachedModel(counting_model("model-b"), tmp_path)
    a.chat(HI)
    assert not b.chat(HI).cached
    assert not a.chat([Message(role="user", content="hello")]).cached
    assert a.chat(HI).cached


def test_cached_model_never_caches_errors(tmp_path: Path) -> None:
    inner = FakeLLM([LLMBackendError("HTTP 500", status_code=500, retryable=True), "recovered"])
    model = CachedModel(inner, tmp_path)
    with pytest.raises(LLMBackendError):
        model.chat(HI)
    assert list(tmp_path.rglob("*.json")) == []
    assert model.chat(HI).text == "recovered"
    assert model.chat(HI).cached


def test_cached_model_skips_unseeded_sampling(tmp_path: Path) -> None:
    inner = counting_model()
    model = CachedModel(inner, tmp_path)
    hot = SamplingParams(temperature=0.8)
    assert [model.chat(HI, hot).text for _ in range(2)] == ["reply 1", "reply 2"]
    assert list(tmp_path.rglob("*.json")) == []


def test_cached_model_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = CachedModel(counting_model(), tmp_path)
    replaced: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        # At the moment of the rename the final file does not exist yet; the data sits in a temp file.
        assert not Path(dst).exists()
        assert json.loads(Path(src).read_text())["response"]["text"] == "reply 1"
        replaced.append((src, dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    model.chat(HI)
    assert len(replaced) == 1
    src, dst = replaced[0]
    assert Path(dst) == model.path(model.key(HI))
    assert Path(src).parent == Path(dst).parent and not Path(src).exists()
    assert [p.name for p in Path(dst).parent.iterdir()] == [Path(dst).name]


def test_cached_model_failed_write_leaves_no_partial_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = CachedModel(counting_model(), tmp_path)

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        model.chat(HI)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_cached_model_rewrites_unreadable_entry(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model = CachedModel(counting_model(), tmp_path)
    path = model.path(model.key(HI))
    path.parent.mkdir(parents=True)
    path.write_text("garbage")
    assert model.chat(HI).text == "reply 1"
    assert "unreadable cache entry" in caplog.text
    assert model.chat(HI).cached
