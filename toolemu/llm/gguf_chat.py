"""The llama.cpp decoding loop behind ``LlamaChatModel``: KV prefix reuse, grammar-checked sampling, stops.

Private to ``toolemu.llm``; ``llama`` arguments are ``llama_cpp.Llama`` objects (imported lazily by the caller).
"""

from __future__ import annotations

import ctypes
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from toolemu.core.errors import ConfigError, LLMBackendError

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


@dataclass(frozen=True, slots=True)
class Decoded:
    """One generation: sampled token ids with their log-probabilities, the text, and why it ended."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    text: str
    finish_reason: str


class GrammarSampler:
    """A GBNF grammar constraint applied the cheap way.

    Masking all candidates (150k for Qwen) at every step costs more than the forward pass of a 0.5B model, so
    the unconstrained choice is checked first and the full mask is built only when the grammar rejects it
    (the same strategy as llama.cpp's own samplers).
    """

    def __init__(self, llama_cpp: Any, vocab: Any, n_vocab: int, gbnf: str) -> None:
        self._lib = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
        if not self._sampler:
            raise ConfigError(f"llama.cpp rejected the grammar:\n{gbnf}")
        self._one = np.zeros(1, dtype=_TOKEN_DATA)
        self._all = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._all["id"] = np.arange(n_vocab, dtype=np.intc)

    def _apply(self, data: np.ndarray) -> None:
        arr = self._lib.llama_token_data_array(
            data=data.ctypes.data_as(self._lib.llama_token_data_p), size=len(data), selected=-1, sorted=False
        )
        self._lib.llama_sampler_apply(self._sampler, ctypes.byref(arr))

    def allows(self, token: int) -> bool:
        """Whether the grammar accepts ``token`` next."""
        self._one[0] = (token, 0.0, 0.0)
        self._apply(self._one)
        return bool(np.isfinite(self._one["logit"][0]))

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """Returns a copy of ``logits`` with every token the grammar rejects set to -inf."""
        self._all["logit"] = logits
        self._apply(self._all)
        masked = np.full_like(logits, -np.inf)
        masked[self._all["id"]] = self._all["logit"]
        return masked

    def accept(self, token: int) -> None:
        """Advances the grammar past ``token`` (which it must allow)."""
        self._lib.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        """Frees the native sampler."""
        if self._sampler:
            self._lib.llama_sampler_free(self._sampler)
            self._sampler = None


class PromptStates:
    """A small LRU of saved KV states, keyed by the tokens they hold.

    llama.cpp reuses the KV cache only for the prefix shared with the previous call. When the agent, emulator
    and judges interleave calls on one model, restoring the state saved after a role's previous call spares
    re-reading its long prompt. Only sequence 0's KV cells are saved (no logits): about 12 KiB per token for
    Qwen2.5-0.5B.
    """

    def __init__(self, llama_cpp: Any, llama: Any, capacity: int) -> None:
        self._lib = llama_cpp
        self._llama = llama
        self._capacity = capacity
        self._states: OrderedDict[tuple[int, ...], bytes] = OrderedDict()
        self.restored = 0
        """How many calls started from a saved state rather than the live KV cache."""

    def __len__(self) -> int:
        return len(self._states)

    def restore_best(self, tokens: Sequence[int]) -> None:
        """Loads the saved state sharing the longest prefix with ``tokens`` when it beats the live KV cache."""
        llama = self._llama
        best, best_len = None, common_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens)
        for key in self._states:
            n = common_prefix(key, tokens)
            if n > best_len:
                best, best_len = key, n
        if best is None:
            return
        self._states.move_to_end(best)
        data = self._states[best]
        ctx = llama._ctx.ctx
        self._lib.llama_memory_clear(self._lib.llama_get_memory(ctx), True)
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if self._lib.llama_state_seq_set_data(ctx, buf, len(data), 0) != len(data):
            llama.n_tokens = 0  # the KV cache is unusable; the whole prompt is evaluated again
            return
        llama.input_ids[: len(best)] = best
        llama.n_tokens = len(best)
        self.restored += 1

    def save(self) -> None:
        """Saves the live KV state under the tokens it holds, evicting least recently used states."""
        llama = self._llama
        key = tuple(llama.input_ids[: llama.n_tokens].tolist())
        ctx = llama._ctx.ctx
        size = self._lib.llama_state_seq_get_size(ctx, 0)
        if not key or size > self._capacity:
            return
        buf = (ctypes.c_uint8 * size)()
        n = self._lib.llama_state_seq_get_data(ctx, buf, size, 0)
        for old in [k for k in self._states if k == key[: len(k)]]:
            del self._states[old]  # the new state extends it
        self._states[key] = bytes(buf)[:n]
        while sum(len(v) for v in self._states.values()) > self._capacity:
            self._states.popitem(last=False)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Returns the length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _log_softmax_at(logits: np.ndarray, token: int) -> float:
    peak = float(logits.max())
    return float(logits[token]) - peak - math.log(float(np.exp(logits - peak, dtype=np.float32).sum()))


def _choose(logits: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    if temperature <= 0:
        return int(np.argmax(logits))
    if top_p >= 1.0:
        # Gumbel-max: argmax(logits / T + Gumbel noise) is an exact sample of softmax(logits / T), at a third of
        # the cost of building the distribution and its cumulative sum over a 150k-token vocabulary.
        noise = np.maximum(rng.random(logits.shape[0], dtype=np.float32), np.float32(1e-38))
        gumbel = -np.log(-np.log(noise))
        return int(np.argmax(logits / np.float32(temperature) + gumbel))
    z = logits.astype(np.float64) / temperature
    z -= z.max()
    p = np.exp(z)
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    sorted_p = p[order]
    keep = np.cumsum(sorted_p) - sorted_p < top_p
    p = np.zeros_like(p)
    p[order[keep]] = sorted_p[keep]
    p /= p.sum()
    return int(np.searchsorted(np.cumsum(p), rng.random() * p.sum(), side="right").clip(0, len(p) - 1))


def _find_stop(text: bytes, start: int, stops: Sequence[bytes]) -> int | None:
    hits = [i for i in (text.find(s, max(0, start)) for s in stops) if i >= 0]
    return min(hits) if hits else None


def decode(
    llama_cpp: Any,
    llama: Any,
    prompt: Sequence[int],
    *,
    max_tokens: int,
    temperature: float,
    top_p: float,
    seed: int | None,
    stops: Sequence[str],
    grammar: str | None,
) -> Decoded:
    """Generates after ``prompt``, reusing the KV cache for the prefix it shares with what was evaluated last.

    Args:
        llama_cpp: The ``llama_cpp`` module.
        llama: A loaded ``llama_cpp.Llama``.
        prompt: Prompt token ids.
        max_tokens: Generation budget.
        temperature: 0 for greedy, else the softmax temperature.
        top_p: Nucleus mass when sampling.
        seed: Seed of the sampling RNG (numpy PCG64; ``None`` for a fresh one).
        stops: Strings that end the reply; the text is cut before the earliest one.
        grammar: GBNF the reply must match, or ``None``.

    Returns:
        The sampled ids (end token excluded, tokens forming a stop string included), their log-probabilities
        under the raw logits (before temperature, top-p and grammar), the text and the finish reason.
    """
    rng = np.random.default_rng(seed)
    vocab = llama._model.vocab
    n_vocab = llama.n_vocab()
    sampler = GrammarSampler(llama_cpp, vocab, n_vocab, grammar) if grammar is not None else None
    encoded_stops = [s.encode("utf-8") for s in stops if s]
    longest = max((len(s) for s in encoded_stops), default=0)
    reuse = min(common_prefix(llama.input_ids[: llama.n_tokens].tolist(), prompt), len(prompt) - 1)
    if reuse > 0:
        llama.n_tokens = reuse  # eval() drops the KV cells from n_tokens on, then appends
    else:
        llama.reset()
    ids: list[int] = []
    logprobs: list[float] = []
    text = b""
    finish = "length"
    stop_at: int | None = None
    try:
        llama.eval(list(prompt[llama.n_tokens :]))
        while len(ids) < max_tokens:
            logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama._ctx.ctx, -1), shape=(n_vocab,))
            token = _choose(logits, temperature, top_p, rng)
            if sampler is not None and not sampler.allows(token):
                masked = sampler.mask(logits)
                if not np.isfinite(masked).any():
                    raise LLMBackendError("The grammar allows no next token; the JSON schema cannot be completed.")
                token = _choose(masked, temperature, top_p, rng)
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                finish = "stop"
                break
            if sampler is not None:
                sampler.accept(token)
            logprobs.append(_log_softmax_at(logits, token))
            piece = llama.detokenize([token])
            ids.append(token)
            text += piece
            stop_at = _find_stop(text, len(text) - len(piece) - longest + 1, encoded_stops) if longest else None
            if stop_at is not None:
                finish = "stop"
                break
            if len(ids) < max_tokens:
                llama.eval([token])
    finally:
        if sampler is not None:
            sampler.close()
    if stop_at is not None:
        text = text[:stop_at]
    return Decoded(tuple(ids), tuple(logprobs), text.decode("utf-8", errors="ignore"), finish)
