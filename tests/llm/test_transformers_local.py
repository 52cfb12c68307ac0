"""Tests for the local transformers backend, on the SmolLM2-135M GGUF dequantized by transformers (offline)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.prerequisites import needs
from toolemu.core.errors import ConfigError
from toolemu.core.types import Message
from toolemu.llm.backend import ChatModel, SamplingParams
from toolemu.llm.transformers_local import TransformersChatModel, from_spec

needs_transformers = needs(modules=("torch", "transformers", "gguf", "accelerate"),
                           install="pip install -e '.[transformers]'")
needs_llama = needs(modules=("llama_cpp",), install="pip install 'llama-cpp-python==0.3.36'")

COUNT = [Message(role="user", content="List the days of the week, one per line.")]
MATH = [Message(role="system", content="You are terse."), Message(role="user", content="What is 2+2? Explain.")]


@pytest.fixture(scope="module")
def gguf_path() -> Path:
    from toolemu.llm.embedded import model_path

    return model_path("smollm2")


@pytest.fixture(scope="module")
def smol_hf(gguf_path: Path) -> Iterator[TransformersChatModel]:
    # One intra-op thread: a multi-threaded float32 reduction can split differently from call to call on a
    # loaded machine, and a near-tie then flips a greedy token (seen once in a full CI run, never alone).
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield TransformersChatModel(gguf_path)
    finally:
        torch.set_num_threads(before)


@needs_transformers
def test_chat_greedy_is_deterministic_with_logprobs(smol_hf: TransformersChatModel) -> None:
    a = smol_hf.chat(COUNT, SamplingParams(max_tokens=10))
    b = smol_hf.chat(COUNT, SamplingParams(max_tokens=10))
    assert isinstance(smol_hf, ChatModel) and smol_hf.name == "hf:SmolLM2-135M-Instruct.Q4_1"
    assert a.token_ids == b.token_ids and a.finish_reason == "length"
    assert a.token_ids is not None and a.logprobs is not None
    assert len(a.token_ids) == len(a.logprobs) == a.completion_tokens == 10
    assert smol_hf.tokenizer.decode(list(a.token_ids), skip_special_tokens=True) == a.text


@needs_transformers
def test_chat_logprobs_match_a_teacher_forced_pass(smol_hf: TransformersChatModel) -> None:
    import torch

    reply = smol_hf.chat(MATH, SamplingParams(max_tokens=8, temperature=1.0, seed=5))
    assert reply.token_ids is not None and reply.logprobs is not None
    prompt = smol_hf.encode_chat(MATH)
    ids = torch.tensor([prompt + list(reply.token_ids)])
    with torch.inference_mode():
        logp = torch.log_softmax(smol_hf.model(input_ids=ids).logits[0].float(), dim=-1)
    start = len(prompt) - 1
    expected = [float(logp[start + i, t]) for i, t in enumerate(reply.token_ids)]
    assert reply.logprobs == pytest.approx(expected, abs=1e-3)


@needs_transformers
def test_chat_seeded_sampling_reproduces(smol_hf: TransformersChatModel) -> None:
    params = SamplingParams(max_tokens=12, temperature=1.0, top_p=0.9, seed=11)
    first = smol_hf.chat(COUNT, params)
    assert smol_hf.chat(COUNT, params).token_ids == first.token_ids
    others = {smol_hf.chat(COUNT, params.model_copy(update={"seed": s})).token_ids for s in (1, 2, 3)}
    assert len(others | {first.token_ids}) > 1


@needs_transformers
def test_chat_stop_string_cuts_reply(smol_hf: TransformersChatModel) -> None:
    free = smol_hf.chat(COUNT, SamplingParams(max_tokens=20))
    stop = re.findall(r"[A-Za-z]{4,}", free.text)[2]
    cut = smol_hf.chat(COUNT, SamplingParams(max_tokens=20, stop=(stop,)))
    assert cut.finish_reason == "stop"
    assert cut.text == free.text[: free.text.index(stop)]


@needs_transformers
def test_chat_json_schema_is_refused_not_ignored(smol_hf: TransformersChatModel) -> None:
    with pytest.raises(ConfigError, match="cannot constrain output to a JSON schema"):
        smol_hf.chat(COUNT, SamplingParams(json_schema={"type": "object"}))


@needs_transformers
@needs_llama
@pytest.mark.llama
def test_chat_agrees_with_llama_cpp_on_the_same_gguf(smol_hf: TransformersChatModel, gguf_path: Path) -> None:
    import torch

    from toolemu.llm.llamacpp import LlamaChatModel

    # A model of its own (no saved prompt states, nothing evaluated before): KV reused from other tests'
    # prompts is computed in other batch splits, and near-tied greedy tokens may then differ from transformers.
    llama = LlamaChatModel(gguf_path, n_ctx=1024, prompt_cache_mb=0, n_threads=1)
    for messages in (COUNT, MATH):
        a = llama.chat(messages, SamplingParams(max_tokens=12))
        b = smol_hf.chat(messages, SamplingParams(max_tokens=12))
        assert a.prompt_tokens == b.prompt_tokens  # the same chat template, rendered by two engines
        assert a.token_ids is not None and a.logprobs is not None
        # llama.cpp's Q4_1 kernels quantise activations to 8 bits; transformers dequantises the weights to
        # float32. Where the top two tokens are within ~0.1 nats (the days-of-the-week prompt on some CPUs),
        # greedy decoding may pick differently, so the engines are compared token by token under teacher
        # forcing: every token llama.cpp chose is within 0.5 nats of the top of transformers' distribution,
        # with about the same log-probability. A wrong template or broken weights is off by nats, not tenths.
        prompt = smol_hf.encode_chat(messages)
        ids = torch.tensor([prompt + list(a.token_ids)])
        with torch.inference_mode():
            logp = torch.log_softmax(smol_hf.model(input_ids=ids).logits[0].float(), dim=-1)
        start = len(prompt) - 1
        for i, token in enumerate(a.token_ids):
            row = logp[start + i]
            assert float(row.max() - row[token]) < 0.5, (i, token, a.text)
            assert abs(float(row[token]) - a.logprobs[i]) < 0.35, (i, token, a.text)
        if a.token_ids[:1] == (b.token_ids or ())[:1]:
            assert a.text[:8] == b.text[:8]


def test_from_spec_rejects_hub_id_without_downloading() -> None:
    with pytest.raises(ConfigError, match=re.escape("toolemu never downloads models from a hub")):
        from_spec("HuggingFaceTB/SmolLM2-135M-Instruct")


def test_transformers_chat_model_rejects_folder_without_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"Model folder {tmp_path} has no config.json")):
        TransformersChatModel(tmp_path)
    with pytest.raises(ConfigError, match=re.escape(f"GGUF file {tmp_path / 'x.gguf'} does not exist")):
        TransformersChatModel(tmp_path, gguf_file="x.gguf")
