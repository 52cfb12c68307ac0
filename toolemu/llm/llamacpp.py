"""In-process llama.cpp backend: a local GGUF file behind the ``ChatModel`` protocol (``llama:<spec>``).

Uses the GGUF's own chat template, stop strings and JSON-schema grammars, and reuses the KV cache across calls.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolemu.core.errors import ConfigError, LLMBackendError
from toolemu.core.types import Message
from toolemu.llm.backend import ChatResponse, SamplingParams
from toolemu.llm.embedded import MODELS, model_path
from toolemu.llm.gguf_chat import PromptStates, decode
from toolemu.llm.llama_probe import probe, usable_cpus

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'llama-cpp-python==0.3.36' (or pip install 'toolemu[local]')"


def _import_llama_cpp() -> Any:
    # llama.cpp's CPU threads are OpenMP threads. Spinning idle ones starve each other as soon as anything
    # else runs on the machine (prompt batches measured 20-70x slower on a busy 2-CPU box). Passive waiting
    # must be chosen before libgomp loads; a user's own setting wins.
    if "llama_cpp" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    try:
        import llama_cpp
    except ImportError as e:
        raise ConfigError(f"The llama.cpp backend needs llama-cpp-python: {INSTALL_HINT}.") from e
    return llama_cpp


DEFAULT_N_CTX = 8192
"""Context tokens for local models: room for a full emulated episode's agent prompt (the agent trims beyond it).
The KV cache costs about 12 KB per token on the embedded model (see ``benchmarks/local_model.py --ctx-sweep``)."""
THREADS_ENV = "TOOLEMU_LLAMA_THREADS"
"""Environment variable that overrides the measured generation thread count."""


def env_threads() -> int | None:
    """Returns the generation thread count set by ``$TOOLEMU_LLAMA_THREADS`` (``None`` when unset).

    Raises:
        ConfigError: the variable is set but is not a positive integer.
    """
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{THREADS_ENV}={raw!r} is not a positive integer thread count; unset it or use e.g. 2.")
    return int(raw)


@dataclass(eq=False)
class _Loaded:
    """One loaded model shared by every ``LlamaChatModel`` on the same file; ``lock`` guards its KV state."""

    llama: Any
    formatter: Any
    states: PromptStates | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    grammars: dict[str, str] = field(default_factory=dict)


_loaded_lock = threading.Lock()
_loaded: dict[tuple[str, int, int, int], _Loaded] = {}
"""Models loaded in this process. The agent, emulator and judges usually share one model: load it once."""


def clear_loaded_models() -> None:
    """Forgets every loaded model; its memory is freed once no ``LlamaChatModel`` refers to it."""
    with _loaded_lock:
        _loaded.clear()


def _load(path: Path, n_ctx: int, n_threads: int, prompt_cache_mb: int) -> _Loaded:
    key = (str(path), n_ctx, n_threads, prompt_cache_mb)
    with _loaded_lock:
        if key in _loaded:
            return _loaded[key]
        llama_cpp = _import_llama_cpp()
        from llama_cpp import llama_chat_format

        started = time.perf_counter()
        try:
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=max(n_threads, usable_cpus()),
                n_batch=512,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as e:
            raise ConfigError(f"llama.cpp could not load {path} as a GGUF model: {e}") from e
        template = llama.metadata.get("tokenizer.chat_template")
        if template:
            eos, bos = llama.token_eos(), llama.token_bos()
            formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
            )
        else:
            logger.warning("%s has no chat template; using ChatML", path)
            formatter = llama_chat_format.format_chatml
        states = PromptStates(llama_cpp, llama, prompt_cache_mb << 20) if prompt_cache_mb > 0 else None
        loaded = _Loaded(llama=llama, formatter=formatter, states=states)
        logger.debug("loaded %s (n_ctx=%d) in %.2fs", path, n_ctx, time.perf_counter() - started)
        _loaded[key] = loaded
        return loaded


class LlamaChatModel:
    """A local GGUF model run in-process by llama.cpp.

    Instances on the same file and settings share one loaded model (and its lock), so an agent, an emulator
    and judges on the embedded model cost one copy of the weights.

    Args:
        model_path: Path to a ``.gguf`` file.
        n_ctx: Context window in tokens (prompt plus reply).
        n_threads: Generation threads (default: ``$TOOLEMU_LLAMA_THREADS``, else the count the build probe
            measured fastest on this machine).
        name: Display name (default: the file stem); ``name`` is ``llama:<name>``.
        prompt_cache_mb: Memory for saved KV states of earlier prompts (0 disables it). The default holds the
            agent's, the emulator's and the judges' prompts at full context (about 100 MB each on the embedded model).

    Raises:
        ConfigError: the file is missing or not a GGUF model, or llama-cpp-python is not installed.
        LLMBackendError: the build cannot run on this machine (its probe decode died by a signal).
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        name: str | None = None,
        prompt_cache_mb: int = 512,
    ) -> None:
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"Model file {path} does not exist; a llama model must be a local .gguf file "
                "(toolemu never downloads models)."
            )
        self._path = path.resolve()
        self._name = f"llama:{name or path.stem}"
        # The probe runs before llama.cpp decodes anything in this process: a build that would die by a
        # signal here fails in a child instead, as a typed error. Explicit threads skip only the timing choice.
        _import_llama_cpp()  # loading the libraries runs no model code; a missing package is a ConfigError
        measured = probe(self._path)
        threads = n_threads or env_threads() or measured.threads
        self._loaded = _load(self._path, n_ctx, threads, prompt_cache_mb)

    @property
    def name(self) -> str:
        """``llama:<name>``."""
        return self._name

    @property
    def path(self) -> Path:
        """The GGUF file."""
        return self._path

    def __repr__(self) -> str:
        return f"LlamaChatModel({str(self._path)!r}, name={self._name!r})"

    @property
    def context_window(self) -> int:
        """The loaded context size in tokens (``n_ctx``)."""
        return int(self._loaded.llama.n_ctx())

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """Returns the prompt tokens of ``messages`` under the GGUF's chat template."""
        return len(self._tokenize(messages))

    def _tokenize(self, messages: Sequence[Message]) -> list[int]:
        loaded = self._loaded
        formatted = loaded.formatter(messages=[{"role": m.role, "content": m.content} for m in messages])
        tokens: list[int] = loaded.llama.tokenize(
            formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
        )
        return tokens

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatResponse:
        """Generates one reply with the GGUF's chat template.

        ``token_ids`` are the sampled tokens (the end token excluded, tokens that formed a stop string
        included); ``logprobs`` are their log-probabilities under the model's raw distribution (before
        temperature, top-p and grammar). ``params.json_schema`` constrains the reply with a grammar that
        enforces types, required keys, enums and string lengths (numeric ranges are not: use an ``enum``).

        Raises:
            LLMBackendError: llama.cpp failed or the prompt does not fit the context (not retryable).
            ConfigError: ``params.json_schema`` cannot be turned into a grammar.
        """
        params = params or SamplingParams()
        loaded = self._loaded
        grammar = self._grammar(params.json_schema) if params.json_schema is not None else None
        llama_cpp = _import_llama_cpp()
        with loaded.lock:
            try:
                llama = loaded.llama
                formatted = loaded.formatter(messages=[{"role": m.role, "content": m.content} for m in messages])
                prompt = self._tokenize(messages)
                n_ctx = llama.n_ctx()
                if len(prompt) >= n_ctx:
                    raise LLMBackendError(
                        f"Prompt of {len(prompt)} tokens does not fit {self._name}'s context of {n_ctx} "
                        "tokens; shorten the conversation or raise n_ctx."
                    )
                extra = formatted.stop if isinstance(formatted.stop, list) else [formatted.stop or ""]
                if loaded.states is not None:
                    loaded.states.restore_best(prompt)
                out = decode(
                    llama_cpp,
                    llama,
                    prompt,
                    max_tokens=min(params.max_tokens, n_ctx - len(prompt)),
                    temperature=params.temperature,
                    top_p=params.top_p,
                    seed=params.seed,
                    stops=[*params.stop, *extra],
                    grammar=grammar,
                )
                if loaded.states is not None:
                    loaded.states.save()
            except (LLMBackendError, ConfigError):
                raise
            except Exception as e:
                raise LLMBackendError(f"llama.cpp failed on {self._name} ({self._path}): {e}") from e
        logger.debug("%s: %d prompt + %d generated tokens", self._name, len(prompt), len(out.token_ids))
        return ChatResponse(
            text=out.text,
            model=self._name,
            finish_reason=out.finish_reason,
            prompt_tokens=len(prompt),
            completion_tokens=len(out.token_ids),
            token_ids=out.token_ids,
            logprobs=out.logprobs,
        )

    def _grammar(self, schema: dict[str, Any]) -> str:
        key = json.dumps(schema)  # key order matters: the grammar emits properties in schema order
        cache = self._loaded.grammars
        if key not in cache:
            from llama_cpp.llama_grammar import json_schema_to_gbnf

            try:
                cache[key] = json_schema_to_gbnf(key)
            except Exception as e:
                raise ConfigError(f"JSON schema cannot be turned into a llama.cpp grammar ({e}): {key}") from e
        return cache[key]


def from_spec(rest: str) -> LlamaChatModel:
    """Builds a model from the part of a ``llama:<rest>`` spec after the colon.

    ``embedded`` (Qwen2.5-Coder-0.5B), ``smollm2`` (SmolLM2-135M) and ``qwen1.5b`` (Qwen2.5-Coder-1.5B) name
    the packaged models; anything else must be the path of an existing ``.gguf`` file.

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
