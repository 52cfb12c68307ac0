"""In-process llama.cpp backend: a local GGUF file behind the ``ChatModel`` protocol (``llama:<spec>``).

Uses the GGUF's own chat template, stop strings, JSON-schema grammars, and reuses the KV cache across calls.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from toolemu.core.errors import ConfigError, LLMBackendError
from toolemu.core.types import Message
from toolemu.llm.backend import ChatResponse, SamplingParams
from toolemu.llm.embedded import MODELS, model_path

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'llama-cpp-python==0.3.36' (or pip install 'toolemu[local]')"


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as e:
        raise ConfigError(f"The llama.cpp backend needs llama-cpp-python: {INSTALL_HINT}.") from e
    return llama_cpp


@dataclass(eq=False)
class _Loaded:
    """One loaded model shared by every ``LlamaChatModel`` on the same file; ``lock`` guards its KV state."""

    llama: Any
    formatter: Any
    path: Path
    lock: threading.Lock = field(default_factory=threading.Lock)
    grammars: dict[str, Any] = field(default_factory=dict)
    states: "_PromptStates | None" = None


_loaded_lock = threading.Lock()
_loaded: dict[tuple[str, int, int | None], _Loaded] = {}
"""Models loaded in this process. Agent, emulator and judges usually share one model, so it is loaded once."""


def clear_loaded_models() -> None:
    """Forgets every loaded model (their memory is freed once no ``LlamaChatModel`` refers to them)."""
    with _loaded_lock:
        _loaded.clear()


def _load(path: Path, n_ctx: int, n_threads: int | None, prompt_cache_mb: int) -> _Loaded:
    key = (str(path), n_ctx, n_threads)
    with _loaded_lock:
        if key in _loaded:
            return _loaded[key]
        llama_cpp = _import_llama_cpp()
        from llama_cpp import llama_chat_format

        started = time.perf_counter()
        try:
            llama = llama_cpp.Llama(
                model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_batch=512, verbose=False
            )
        except (ValueError, RuntimeError, OSError) as e:
            raise ConfigError(f"llama.cpp could not load {path} as a GGUF model: {e}") from e
        template = llama.metadata.get("tokenizer.chat_template")
        if template:
            model = llama._model
            eos, bos = llama.token_eos(), llama.token_bos()
            formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=model.token_get_text(eos) if eos != -1 else "",
                bos_token=model.token_get_text(bos) if bos != -1 else "",
            )
        else:
            logger.warning("%s has no chat template; using ChatML", path)
            formatter = llama_chat_format.format_chatml
        loaded = _Loaded(llama=llama, formatter=formatter, path=path)
        if prompt_cache_mb > 0:
            loaded.states = _PromptStates(llama, prompt_cache_mb << 20)
        logger.debug("loaded %s (n_ctx=%d) in %.2fs", path, n_ctx, time.perf_counter() - started)
        _loaded[key] = loaded
        return loaded


class _PromptStates:
    """A small LRU of saved KV states keyed by their token prefix.

    llama.cpp reuses the KV cache only for the longest prefix shared with the previous call. When the agent,
    emulator and judges interleave calls on one model, restoring the state saved after a role's previous
    call saves re-reading its long, shared prompt. Only sequence 0's KV cells are saved (no logits), so a
    state costs about (tokens x KV bytes per token).
    """

    def __init__(self, llama: Any, capacity: int) -> None:
        self._llama = llama
        self._capacity = capacity
        self._states: dict[tuple[int, ...], bytes] = {}

    def __len__(self) -> int:
        return len(self._states)

    def restore_best(self, tokens: Sequence[int]) -> int:
        """Loads the saved state sharing the longest prefix with ``tokens`` if it beats the live KV cache."""
        llama = self._llama
        live = _common_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens)
        best, best_len = None, live
        for key in self._states:
            n = _common_prefix(key, tokens)
            if n > best_len:
                best, best_len = key, n
        if best is None:
            return live
        data = self._states.pop(best)
        self._states[best] = data  # most recently used last
        llama_cpp = _import_llama_cpp()
        ctx = llama._ctx.ctx
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
        buf = (llama_cpp.ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_seq_set_data(ctx, buf, len(data), 0) == 0:
            llama.n_tokens = 0
            return 0
        llama.input_ids[: len(best)] = best
        llama.n_tokens = len(best)
        llama._requires_eval = True
        return best_len

    def save(self) -> None:
        """Saves the live KV state under the tokens it holds."""
        llama = self._llama
        llama_cpp = _import_llama_cpp()
        key = tuple(llama.input_ids[: llama.n_tokens].tolist())
        if not key:
            return
        ctx = llama._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        if size > self._capacity:
            return
        buf = (llama_cpp.ctypes.c_uint8 * size)()
        n = llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0)
        # A prefix of the new key is now redundant: the new state covers it.
        for old in [k for k in self._states if k == key[: len(k)]]:
            del self._states[old]
        self._states[key] = bytes(buf[:n])
        while sum(len(v) for v in self._states.values()) > self._capacity and self._states:
            del self._states[next(iter(self._states))]


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class LlamaChatModel:
    """A local GGUF model run in-process by llama.cpp.

    Args:
        model_path: Path to a ``.gguf`` file.
        n_ctx: Context window in tokens.
        n_threads: CPU threads (default: llama.cpp's choice, half the cores).
        name: Display name (default: the file stem); ``name`` is ``llama:<name>``.
        prompt_cache_mb: Memory for saved KV states of earlier prompts (0 disables it).

    Raises:
        ConfigError: the file is missing or not a GGUF model, or llama-cpp-python is not installed.
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        name: str | None = None,
        prompt_cache_mb: int = 128,
    ) -> None:
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"Model file {path} does not exist; a llama model must be a local .gguf file "
                "(toolemu never downloads models)."
            )
        self._path = path.resolve()
        self._name = f"llama:{name or path.stem}"
        self._loaded = _load(self._path, n_ctx, n_threads, prompt_cache_mb)

    @property
    def name(self) -> str:
        """``llama:<name>``."""
        return self._name

    @property
    def path(self) -> Path:
        """The GGUF file."""
        return self._path

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatResponse:
        """Generates one reply with the GGUF's chat template.

        ``token_ids`` are the sampled tokens (including any that formed a stop string, excluding the end
        token); ``logprobs`` are the model's unconstrained log-probabilities of those tokens (before
        temperature, top-p and grammar).

        Raises:
            LLMBackendError: llama.cpp failed or the prompt does not fit the context (not retryable).
            ConfigError: ``params.json_schema`` cannot be turned into a grammar.
        """
        params = params or SamplingParams()
        loaded = self._loaded
        with loaded.lock:
            try:
                return self._generate(loaded, messages, params)
            except (LLMBackendError, ConfigError):
                raise
            except Exception as e:
                raise LLMBackendError(f"llama.cpp failed on {self._name} ({self._path}): {e}") from e

    def _grammar(self, loaded: _Loaded, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in loaded.grammars:
            from llama_cpp import LlamaGrammar

            try:
                loaded.grammars[key] = LlamaGrammar.from_json_schema(key, verbose=False)
            except Exception as e:
                raise ConfigError(f"JSON schema cannot be turned into a llama.cpp grammar: {e}; schema: {key}") from e
        return loaded.grammars[key]

    def _generate(self, loaded: _Loaded, messages: Sequence[Message], params: SamplingParams) -> ChatResponse:
        llama_cpp = _import_llama_cpp()
        llama = loaded.llama
        chat = [{"role": m.role, "content": m.content} for m in messages]
        formatted = loaded.formatter(messages=chat)
        prompt = llama.tokenize(formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True)
        n_ctx = llama.n_ctx()
        if len(prompt) >= n_ctx:
            raise LLMBackendError(
                f"Prompt of {len(prompt)} tokens does not fit {self._name}'s context of {n_ctx} tokens; "
                "shorten the history or raise n_ctx."
            )
        extra = formatted.stop if isinstance(formatted.stop, list) else [formatted.stop] if formatted.stop else []
        stops = [s.encode("utf-8") for s in (*params.stop, *extra) if s]
        grammar = self._grammar(loaded, params.json_schema) if params.json_schema is not None else None
        max_tokens = min(params.max_tokens, n_ctx - len(prompt))
        if loaded.states is not None:
            loaded.states.restore_best(prompt)
        llama.set_seed(params.seed if params.seed is not None else random.randrange(2**31))
        vocab = llama._model.vocab
        ids: list[int] = []
        logprobs: list[float] = []
        text = b""
        finish = "length"
        stop_at: int | None = None
        longest_stop = max((len(s) for s in stops), default=0)
        tokens: Iterator[int] = llama.generate(
            prompt,
            top_k=0,
            top_p=params.top_p,
            min_p=0.0,
            typical_p=1.0,
            temp=params.temperature,
            repeat_penalty=1.0,
            grammar=grammar,
        )
        try:
            for token in tokens:
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    finish = "stop"
                    break
                ids.append(token)
                logprobs.append(_logprob(llama, token))
                piece = llama.detokenize([token], prev_tokens=prompt + ids[:-1])
                text += piece
                if stops:
                    stop_at = _find_stop(text, len(text) - len(piece) - longest_stop, stops)
                    if stop_at is not None:
                        finish = "stop"
                        break
                if len(ids) >= max_tokens:
                    break
        finally:
            tokens.close()  # type: ignore[attr-defined]
        if loaded.states is not None:
            loaded.states.save()
        if stop_at is not None:
            text = text[:stop_at]
        decoded = text.decode("utf-8", errors="ignore")
        return ChatResponse(
            text=decoded,
            model=self._name,
            finish_reason=finish,
            prompt_tokens=len(prompt),
            completion_tokens=len(ids),
            token_ids=tuple(ids),
            logprobs=tuple(logprobs),
        )


def _find_stop(text: bytes, start: int, stops: Sequence[bytes]) -> int | None:
    """Returns the byte offset of the earliest stop string found in ``text[start:]``, if any."""
    hits = [i for i in (text.find(s, max(0, start)) for s in stops) if i >= 0]
    return min(hits) if hits else None


def _logprob(llama: Any, token: int) -> float:
    """Returns log p(token) under the raw logits the token was sampled from."""
    llama_cpp = _import_llama_cpp()
    ptr = llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1)
    logits = np.ctypeslib.as_array(ptr, shape=(llama._n_vocab,))
    peak = float(logits.max())
    return float(logits[token]) - peak - math.log(float(np.exp(logits - peak).sum()))


def from_spec(rest: str) -> LlamaChatModel:
    """Builds a model from the part of a ``llama:<rest>`` spec after the colon.

    ``embedded`` (Qwen2.5-Coder-0.5B), ``smollm2`` (SmolLM2-135M) and ``qwen1.5b`` (Qwen2.5-Coder-1.5B) name
    the packaged models; anything else must be a path to an existing ``.gguf`` file.

    Raises:
        ConfigError: a packaged model is not installed, or ``rest`` is not a local GGUF file.
    """
    if rest in MODELS:
        return LlamaChatModel(model_path(rest), name=rest)
    path = Path(rest).expanduser()
    if not path.is_file() or path.suffix.lower() != ".gguf":
        raise ConfigError(
            f"`llama:{rest}` is neither a packaged model ({', '.join(MODELS)}) nor a local .gguf file; "
            "toolemu never downloads models, pass the path of a GGUF file on disk."
        )
    return LlamaChatModel(path)


def default_threads() -> int:
    """Returns a thread count for generation: the physical-ish core count, at least 1."""
    return max(1, (os.cpu_count() or 2) // 2)
