"""Tests for toolemu.llm.resolve and the package surface of toolemu.llm."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolemu.core.errors import ConfigError, NotRegisteredError
from toolemu.core.types import Message
from toolemu.llm import (
    MODEL_BACKENDS,
    CachedModel,
    FakeLLM,
    OpenAICompatModel,
    default_spec,
    describe_model,
    resolve_model,
    split_spec,
)
from toolemu.llm.openai_compat import MISSING_KEY_MESSAGE

ENV_VARS = ("TOOLEMU_BASE_URL", "OPENAI_BASE_URL", "TOOLEMU_API_KEY", "OPENAI_API_KEY", "TOOLEMU_MODEL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def test_resolve_model_passes_chat_model_through() -> None:
    fake = FakeLLM(["x"])
    assert resolve_model(fake) is fake
    with pytest.raises(ConfigError, match="cannot apply to an already built model `fake`"):
        resolve_model(fake, api_key="sk-x")


def test_resolve_model_fake_spec_always_answers_text() -> None:
    model = resolve_model("fake:Final Answer: done")
    assert isinstance(model, FakeLLM)
    assert model.chat([Message(role="user", content="q")]).text == "Final Answer: done"
    assert model.chat([Message(role="user", content="q2")]).text == "Final Answer: done"


@pytest.mark.parametrize(
    ("spec", "model_name"),
    [
        ("openai:gpt-4o", "gpt-4o"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("openai:qwen2.5:7b", "qwen2.5:7b"),
        ("ft:gpt-4o-mini:acme::abc123", "ft:gpt-4o-mini:acme::abc123"),
    ],
    ids=["scheme", "bare", "scheme-with-colon-name", "fine-tune-id"],
)
def test_resolve_model_openai_specs(spec: str, model_name: str) -> None:
    model = resolve_model(spec, api_key="sk-test-123456789")
    assert isinstance(model, OpenAICompatModel)
    assert model.model == model_name
    assert model.name == f"openai:{model_name}"


def test_resolve_model_ollama_tag_on_custom_endpoint() -> None:
    model = resolve_model("mistral:7b", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert isinstance(model, OpenAICompatModel) and model.model == "mistral:7b"


def test_resolve_model_unknown_prefix_without_endpoint_is_unknown_backend() -> None:
    with pytest.raises(NotRegisteredError, match=re.escape("model backend `nonsense` is not registered")) as info:
        resolve_model("nonsense:foo", api_key="sk-test-123456789")
    assert "--base-url" in str(info.value) and "openai:nonsense:foo" in str(info.value)


def test_resolve_model_openai_reads_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLEMU_BASE_URL", "http://127.0.0.1:9/v1")
    model = resolve_model("openai:local-model")
    assert isinstance(model, OpenAICompatModel)
    assert model.base_url.startswith("http://127.0.0.1:9/v1")


def test_resolve_model_missing_key_names_both_fixes() -> None:
    with pytest.raises(ConfigError, match=re.escape(MISSING_KEY_MESSAGE)):
        resolve_model("openai:gpt-4o-mini")
    assert "--api-key" in MISSING_KEY_MESSAGE and "OPENAI_API_KEY" in MISSING_KEY_MESSAGE
    assert "--base-url" in MISSING_KEY_MESSAGE


def test_resolve_model_misspelt_scheme_suggests_fix() -> None:
    with pytest.raises(NotRegisteredError, match=re.escape("Did you mean `llama`?")) as info:
        resolve_model("lama:smollm2")
    assert "openai:lama:smollm2" in str(info.value)
    with pytest.raises(NotRegisteredError, match=re.escape("Did you mean `openai`?")):
        resolve_model("opnai:gpt-4o")


def test_resolve_model_empty_spec_is_config_error() -> None:
    with pytest.raises(ConfigError, match="model spec is empty"):
        resolve_model("  ")


def test_resolve_model_rejects_base_url_for_non_openai_spec() -> None:
    with pytest.raises(
        ConfigError, match=re.escape("--base-url/--api-key apply to OpenAI-compatible models")
    ):
        resolve_model("fake:x", base_url="http://127.0.0.1:1/v1")


def test_resolve_model_cache_dir_wraps_in_cache(tmp_path: Path) -> None:
    model = resolve_model("fake:cached", cache_dir=tmp_path)
    assert isinstance(model, CachedModel)
    hi = [Message(role="user", content="hi")]
    assert not model.chat(hi).cached
    assert model.chat(hi).cached
    assert str(tmp_path) in describe_model(model)


def test_default_spec_without_configuration_is_embedded_model() -> None:
    assert default_spec() == "llama:embedded"


@pytest.mark.parametrize(
    "env",
    [{"OPENAI_API_KEY": "sk-x"}, {"TOOLEMU_API_KEY": "sk-x"}, {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}],
    ids=["openai-key", "toolemu-key", "base-url"],
)
def test_default_spec_with_configured_endpoint_is_openai(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert default_spec() == "openai:gpt-4o-mini"
    model = resolve_model(None)
    assert isinstance(model, OpenAICompatModel) and model.model == "gpt-4o-mini"


def test_default_spec_from_args_and_toolemu_model(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_spec(base_url="http://127.0.0.1:9/v1") == "openai:gpt-4o-mini"
    assert default_spec(api_key="sk-x") == "openai:gpt-4o-mini"
    monkeypatch.setenv("TOOLEMU_MODEL", "fake:from env")
    assert default_spec() == "fake:from env"
    assert isinstance(resolve_model(None), FakeLLM)


def test_split_spec_schemes() -> None:
    assert split_spec("llama:/models/x.gguf") == ("llama", "/models/x.gguf")
    assert split_spec("hf:./checkpoints/run1") == ("hf", "./checkpoints/run1")
    assert split_spec("fake:") == ("fake", "")


def test_model_backends_register_local_backends_lazily() -> None:
    assert MODEL_BACKENDS.entry("llama").entry_point == "toolemu.llm.llamacpp:from_spec"
    assert MODEL_BACKENDS.entry("hf").entry_point == "toolemu.llm.transformers_local:from_spec"
    assert set(MODEL_BACKENDS) >= {"openai", "fake", "llama", "hf"}


def test_describe_model_never_shows_the_key() -> None:
    model = resolve_model("openai:gpt-4o", api_key="sk-secret-value-12345", base_url="http://127.0.0.1:9/v1")
    text = describe_model(model)
    assert "gpt-4o" in text and "127.0.0.1:9" in text
    assert "sk-secret" not in text and "sk-secret" not in repr(model)


def test_import_toolemu_llm_does_not_load_local_runtimes() -> None:
    code = (
        "import sys, toolemu.llm\n"
        "heavy = [m for m in ('llama_cpp', 'torch', 'transformers') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
