"""Turns a model spec (``openai:gpt-4o-mini``, ``llama:embedded``, ``fake:hi``...) into a ``ChatModel``.

Backends register under a scheme in ``MODEL_BACKENDS``; local backends load lazily by ``module:attr``.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from toolemu.core.errors import ConfigError, NotRegisteredError
from toolemu.core.registry import Registry
from toolemu.llm.backend import ChatModel
from toolemu.llm.cache import CachedModel
from toolemu.llm.fake import FakeLLM
from toolemu.llm.openai_compat import (
    API_KEY_ENV,
    BASE_URL_ENV,
    DEFAULT_MAX_CONNECTIONS,
    OpenAICompatModel,
    env_value,
)

MODEL_ENV = "TOOLEMU_MODEL"
"""Environment variable holding the default model spec."""
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
"""The model used when an OpenAI key or base URL is configured and no spec is given."""
DEFAULT_LOCAL_SPEC = "llama:embedded"
"""The spec used when nothing is configured: the embedded offline model."""

MODEL_BACKENDS: Registry[ChatModel] = Registry("model backend")
"""Scheme -> factory ``(rest: str) -> ChatModel``; ``openai`` also takes ``base_url``, ``api_key`` and
``max_connections``."""

_EXTRAS = {"llama": "local", "hf": "transformers"}
_SCHEME = re.compile(r"^([a-z][a-z0-9_-]*):(.*)$", re.DOTALL)


def _openai_from_spec(
    rest: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> ChatModel:
    return OpenAICompatModel(rest, base_url=base_url, api_key=api_key, max_connections=max_connections)


def _fake_from_spec(rest: str) -> ChatModel:
    return FakeLLM.constant(rest)


MODEL_BACKENDS.register("openai", _openai_from_spec)
MODEL_BACKENDS.register("fake", _fake_from_spec)
MODEL_BACKENDS.register("llama", "toolemu.llm.llamacpp:from_spec")
MODEL_BACKENDS.register("hf", "toolemu.llm.transformers_local:from_spec")


def split_spec(spec: str) -> tuple[str, str]:
    """Returns ``(scheme, rest)`` for a spec; a bare model name gets the ``openai`` scheme.

    A prefix that is not a registered scheme is part of an OpenAI-compatible model name (Ollama's
    ``mistral:7b``, OpenAI's ``ft:gpt-4o-mini:org::id``) unless it looks like a misspelt scheme.

    Examples:
        >>> split_spec("gpt-4o-mini")
        ('openai', 'gpt-4o-mini')
        >>> split_spec("llama:smollm2")
        ('llama', 'smollm2')
        >>> split_spec("openai:qwen2.5:7b")
        ('openai', 'qwen2.5:7b')

    Raises:
        NotRegisteredError: the prefix is close to a registered scheme (``lama:smollm2``).
    """
    spec = spec.strip()
    if not spec:
        raise ConfigError(
            "model spec is empty; pass e.g. `gpt-4o-mini`, `openai:<model>` or `llama:embedded`"
        )
    scheme, sep, rest = spec.partition(":")
    if sep and scheme in MODEL_BACKENDS:
        return scheme, rest
    match = _SCHEME.match(spec)
    near = match and difflib.get_close_matches(match.group(1), list(MODEL_BACKENDS), n=1, cutoff=0.6)
    if match and near:
        err = NotRegisteredError("model backend", match.group(1), MODEL_BACKENDS)
        err.args = (
            f"{err.args[0]}. For an OpenAI-compatible model whose name has a colon, write `openai:{spec}`",
        )
        raise err
    return "openai", spec


def resolve_model(
    spec: str | ChatModel | None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    cache_dir: str | Path | None = None,
    max_connections: int | None = None,
) -> ChatModel:
    """Returns the chat model a spec names, optionally behind a disk cache.

    Args:
        spec: A ``ChatModel`` (returned as is); a spec string: ``openai:<model>`` or a bare model name
            (OpenAI-compatible), ``fake:<text>`` (always answers ``<text>``), ``llama:<embedded|smollm2|
            qwen1.5b|/path/model.gguf>`` (llama.cpp in-process), ``hf:<local folder>`` (transformers); or
            ``None``: the ``TOOLEMU_MODEL`` spec if set, else ``gpt-4o-mini`` when an OpenAI key or base URL
            is configured (arguments or environment), else ``llama:embedded``.
        base_url: OpenAI-compatible endpoint; only valid with OpenAI-compatible specs.
        api_key: OpenAI-compatible key; only valid with OpenAI-compatible specs.
        cache_dir: When given, wrap the model in a ``CachedModel`` using this folder.
        max_connections: Connection pool of an OpenAI-compatible model: the calls it may have in flight at once
            (``bench --concurrency``); ignored by other backends, which hold no connections.

    Returns:
        The model. ``describe_model`` says in one line which backend it is.

    Raises:
        ConfigError: a missing key for an OpenAI-compatible model, or ``base_url``/``api_key`` given with a
            non-OpenAI spec.
        NotRegisteredError: a misspelt scheme; the message suggests the close one.
    """
    if spec is None:
        spec = default_spec(base_url=base_url, api_key=api_key)
    if isinstance(spec, str):
        model = _from_string(spec, base_url=base_url, api_key=api_key, max_connections=max_connections)
    elif isinstance(spec, ChatModel):
        if base_url is not None or api_key is not None:
            raise ConfigError(
                f"--base-url/--api-key cannot apply to an already built model `{spec.name}`; drop them"
            )
        model = spec
    else:
        raise ConfigError(f"model spec must be a string or a ChatModel, got {type(spec).__name__}")
    return CachedModel(model, cache_dir) if cache_dir is not None else model


def default_spec(*, base_url: str | None = None, api_key: str | None = None) -> str:
    """Returns the spec used when none is given (see ``resolve_model``)."""
    from_env = os.environ.get(MODEL_ENV, "").strip()
    if from_env:
        return from_env
    configured = base_url or api_key or env_value(BASE_URL_ENV) or env_value(API_KEY_ENV)
    return f"openai:{DEFAULT_OPENAI_MODEL}" if configured else DEFAULT_LOCAL_SPEC


# OpenAI's own model names with a colon: fine-tunes (``ft:gpt-4o-mini:org::id``).
_OPENAI_COLON_PREFIXES = frozenset({"ft"})


def _check_colon_name(spec: str, base_url: str | None) -> None:
    """A ``prefix:name`` spec whose prefix is no backend is a model name only on a custom endpoint.

    On OpenAI itself only fine-tune ids have a colon, so ``nonsense:foo`` without a base URL is a mistyped
    backend, not a model to send to api.openai.com with the host's key.
    """
    match = _SCHEME.match(spec.strip())
    if match is None or spec.strip().startswith("openai:") or match.group(1) in _OPENAI_COLON_PREFIXES:
        return
    if base_url or env_value(BASE_URL_ENV):
        return
    err = NotRegisteredError("model backend", match.group(1), MODEL_BACKENDS)
    err.args = (
        f"{err.args[0]}. For a model named `{spec}` on an OpenAI-compatible server (Ollama, vLLM), pass "
        f"--base-url (or set TOOLEMU_BASE_URL) or write `openai:{spec}`",
    )
    raise err


def _from_string(
    spec: str, *, base_url: str | None, api_key: str | None, max_connections: int | None = None
) -> ChatModel:
    scheme, rest = split_spec(spec)
    if scheme == "openai":
        _check_colon_name(spec, base_url)
    try:
        factory = MODEL_BACKENDS.entry(scheme).load()
    except ImportError as err:
        extra = _EXTRAS.get(scheme, "")
        hint = f"; install it with `pip install 'toolemu[{extra}]'`" if extra else ""
        raise ConfigError(f"model backend `{scheme}` (for `{spec}`) is not available: {err}{hint}") from err
    if scheme == "openai":
        pool = {} if max_connections is None else {"max_connections": max_connections}
        return factory(rest, base_url=base_url, api_key=api_key, **pool)
    if base_url is not None or api_key is not None:
        raise ConfigError(
            f"--base-url/--api-key apply to OpenAI-compatible models, not to `{spec}`; "
            f"drop them or use `openai:<model>`"
        )
    return factory(rest)


def describe_model(model: ChatModel) -> str:
    """Returns one line saying which backend and model are in use, for the CLI.

    Uses the model's ``describe()`` method when it has one, else its ``name``. Never includes secrets.

    Examples:
        >>> describe_model(resolve_model("fake:hello"))
        "fake model `fake` (always answers 'hello')"
    """
    describe = getattr(model, "describe", None)
    if callable(describe):
        text = describe()
        if isinstance(text, str):
            return text
    return model.name
