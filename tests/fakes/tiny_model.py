"""A tiny randomly initialised causal LM with a word-level tokenizer, written to a local folder.

For smoke tests of training pipelines on a CPU: it loads like any transformers model folder (``hf:<folder>``),
with no hub download. The vocabulary is a short word list plus the ReAct keywords as single tokens, so even a
random policy emits parseable actions now and then and learning shows within a few steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolemu.core.errors import ConfigError

REACT_TOKENS: tuple[str, ...] = ("Final Answer:", "Thought:", "Action:", "Action Input:")
"""Multi-word ReAct keywords kept as single tokens."""
SPECIAL_TOKENS: tuple[str, ...] = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
"""Padding, turn start and turn end (ChatML)."""
UNKNOWN_TOKEN = "<unk>"

CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""A minimal ChatML template (prefix-preserving, as multi-turn training needs)."""


def _imports() -> tuple[Any, Any, Any]:
    try:
        import tokenizers
        import torch
        import transformers
    except ImportError as e:
        raise ConfigError(
            "A tiny model needs torch, transformers and tokenizers: pip install 'toolemu[transformers]'"
        ) from e
    return torch, transformers, tokenizers


def save_tiny_model(
    folder: str | Path,
    words: Sequence[str],
    *,
    extra_tokens: Sequence[str] = (),
    chat_template: str = CHATML_TEMPLATE,
    hidden_size: int = 32,
    layers: int = 2,
    seed: int = 0,
) -> Path:
    """Writes a randomly initialised Llama-architecture model and its tokenizer to ``folder``.

    Args:
        folder: Where to write (created; must be empty or absent).
        words: The vocabulary besides the ReAct keywords and special tokens; other words become ``<unk>``.
        extra_tokens: More strings kept as single tokens even when they contain spaces or punctuation.
        chat_template: Jinja chat template stored with the tokenizer.
        hidden_size: Width of the model.
        layers: Number of transformer layers.
        seed: Seed of the random initialisation.

    Returns:
        ``folder``, loadable with ``TransformersChatModel(folder)`` or ``AutoModelForCausalLM``.

    Raises:
        ConfigError: ``folder`` exists and is not empty, or ``words`` is empty.
    """
    target = Path(folder)
    if target.exists() and any(target.iterdir()):
        raise ConfigError(f"{target} is not empty; save_tiny_model writes a new model folder, pick an empty one")
    if not words:
        raise ConfigError("save_tiny_model needs at least one vocabulary word")
    torch, transformers, tokenizers = _imports()
    vocab: dict[str, int] = {}
    for token in (*SPECIAL_TOKENS, UNKNOWN_TOKEN, "\n", *dict.fromkeys(words)):
        vocab.setdefault(token, len(vocab))
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token=UNKNOWN_TOKEN))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.Split(tokenizers.Regex(r"[^\S\n]+"), behavior="removed"),
        tokenizers.pre_tokenizers.Split(tokenizers.Regex(r"\n"), behavior="isolated"),
    ])
    tok.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tok.add_tokens([tokenizers.AddedToken(t, normalized=False) for t in (*REACT_TOKENS, *extra_tokens)])
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token=UNKNOWN_TOKEN, pad_token="<|endoftext|>", eos_token="<|im_end|>",
        bos_token=None,
    )
    fast.chat_template = chat_template
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(fast), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=8192,
        tie_word_embeddings=True, pad_token_id=fast.pad_token_id, eos_token_id=fast.eos_token_id,
        bos_token_id=None,
    )
    model = transformers.LlamaForCausalLM(config)
    model.generation_config.eos_token_id = fast.eos_token_id
    model.generation_config.pad_token_id = fast.pad_token_id
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    fast.save_pretrained(target)
    return target
