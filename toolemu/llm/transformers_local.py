"""Local transformers backend (``hf:<path>``): a model folder or GGUF file on disk, never a hub download.

Returns token ids and log-probabilities with every reply, which LM fine-tuning needs.
"""

from __future__ import annotations

import inspect
import logging
import os
import secrets
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolemu.core.errors import ConfigError, LLMBackendError
from toolemu.core.types import Message
from toolemu.llm.backend import ChatResponse, SamplingParams

logger = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'torch==2.13.0' transformers gguf (or pip install 'toolemu[transformers]')"


def _imports() -> tuple[Any, Any]:
    # torch's CPU threads are OpenMP threads; spinning idle ones slow generation ~5x on a busy machine.
    # Passive waiting must be chosen before libgomp loads; a user's own setting wins.
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    try:
        import torch
        import transformers
    except ImportError as e:
        raise ConfigError(f"The transformers backend needs torch and transformers: {INSTALL_HINT}.") from e
    return torch, transformers


def _resolve(path: str | Path, gguf_file: str | None) -> tuple[Path, str | None]:
    """Returns (folder, gguf file name or None) for a local folder, a GGUF file, or a folder + GGUF name."""
    p = Path(path).expanduser()
    if p.is_file() and p.suffix.lower() == ".gguf" and gguf_file is None:
        return p.parent, p.name
    if p.is_dir():
        if gguf_file is not None:
            if not (p / gguf_file).is_file():
                raise ConfigError(f"GGUF file {p / gguf_file} does not exist.")
            return p, gguf_file
        if not (p / "config.json").is_file():
            raise ConfigError(f"Model folder {p} has no config.json; pass a transformers model folder or a .gguf file.")
        return p, None
    raise ConfigError(
        f"`{path}` is not a local model folder or GGUF file; the transformers backend must be given one "
        "on disk (toolemu never downloads models from a hub)."
    )


class TransformersChatModel:
    """A causal LM loaded by transformers from local files only.

    Args:
        path: A model folder (with ``config.json``), a ``.gguf`` file, or a folder holding ``gguf_file``.
        gguf_file: GGUF file name inside ``path`` (dequantized to ``dtype`` on load).
        device: torch device (``cpu``, ``cuda``...).
        dtype: torch dtype name (``float32``, ``bfloat16``, ``float16``).
        name: Display name (default: the folder or file stem); ``name`` is ``hf:<name>``.

    Attributes:
        model: The loaded ``PreTrainedModel`` (fine-tuning updates it in place).
        tokenizer: Its tokenizer, with the chat template used by :meth:`encode_chat`.

    Raises:
        ConfigError: the path is not a local model, or torch/transformers are missing or cannot load it.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        gguf_file: str | None = None,
        device: str = "cpu",
        dtype: str = "float32",
        name: str | None = None,
    ) -> None:
        folder, gguf = _resolve(path, gguf_file)
        torch, transformers = _imports()
        torch_dtype = getattr(torch, dtype, None)
        if not isinstance(torch_dtype, torch.dtype):
            raise ConfigError(f"Unknown torch dtype `{dtype}`; use float32, bfloat16 or float16.")
        kwargs: dict[str, Any] = {"local_files_only": True}
        # transformers 4.56 renamed ``torch_dtype`` to ``dtype``.
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
        dtype_arg = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"
        if gguf is not None:
            kwargs["gguf_file"] = gguf
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), **kwargs)
            if getattr(self.tokenizer, "chat_template", None) is None:
                raise ConfigError(f"Tokenizer of {folder} has no chat template; a chat model is required.")
            model = transformers.AutoModelForCausalLM.from_pretrained(str(folder), **{dtype_arg: torch_dtype}, **kwargs)
            self.model = model.to(device)
        except (OSError, ValueError, RuntimeError, ImportError) as e:
            raise ConfigError(f"transformers could not load {folder / (gguf or '')}: {e}") from e
        self.model.eval()
        params = inspect.signature(self.model.forward).parameters
        # transformers 5 renamed ``past_key_values`` to ``cache``; 4.x still needs the old name.
        self._cache_arg = "cache" if "cache" in params else "past_key_values"
        self._keep_last = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        self._device = device
        self._lock = threading.Lock()
        self._name = f"hf:{name or Path(gguf or folder.name).stem}"
        eos = self.model.generation_config.eos_token_id
        ids = list(eos) if isinstance(eos, list) else [eos] if eos is not None else []
        if self.tokenizer.eos_token_id is not None:
            ids.append(self.tokenizer.eos_token_id)
        self._eos = frozenset(int(i) for i in ids)

    @property
    def name(self) -> str:
        """``hf:<name>``."""
        return self._name

    def encode_chat(self, messages: Sequence[Message]) -> list[int]:
        """Returns the prompt token ids for ``messages`` under the tokenizer's chat template."""
        chat = [{"role": m.role, "content": m.content} for m in messages]
        text = self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        ids: list[int] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids

    def chat(self, messages: Sequence[Message], params: SamplingParams | None = None) -> ChatResponse:
        """Generates one reply; greedy at temperature 0, else seeded sampling with temperature and top-p.

        ``token_ids`` are the sampled tokens (the end token excluded); ``logprobs`` are their log-probabilities
        under the model's raw distribution (temperature 1, no top-p), as policy-gradient training needs.

        Raises:
            ConfigError: ``params.json_schema`` is set (constrained decoding needs the llama backend).
            LLMBackendError: generation failed.
        """
        params = params or SamplingParams()
        if params.json_schema is not None:
            raise ConfigError(
                f"{self._name} cannot constrain output to a JSON schema; use a llama: model (grammar-constrained) "
                "for judges and the emulator, or leave json_schema unset."
            )
        with self._lock:
            try:
                return self._generate(messages, params)
            except (ConfigError, LLMBackendError):
                raise
            except Exception as e:
                raise LLMBackendError(f"transformers generation failed on {self._name}: {e}") from e

    def _generate(self, messages: Sequence[Message], params: SamplingParams) -> ChatResponse:
        torch, _ = _imports()
        prompt = self.encode_chat(messages)
        generator = torch.Generator(device=self._device)
        generator.manual_seed(params.seed if params.seed is not None else secrets.randbits(63))
        ids: list[int] = []
        logprobs: list[float] = []
        finish = "length"
        stop_at: int | None = None
        cache = None
        current = torch.tensor([prompt], device=self._device)
        with torch.inference_mode():
            for _ in range(params.max_tokens):
                step = {self._cache_arg: cache, **self._keep_last}
                out = self.model(input_ids=current, use_cache=True, **step)
                cache = out.cache if hasattr(out, "cache") else out.past_key_values
                logits = out.logits[0, -1].float()
                logp = torch.log_softmax(logits, dim=-1)
                token = self._sample(torch, logits, params, generator)
                if token in self._eos:
                    finish = "stop"
                    break
                ids.append(token)
                logprobs.append(float(logp[token]))
                if params.stop:
                    text = self.tokenizer.decode(ids, skip_special_tokens=True)
                    hits = [i for i in (text.find(s) for s in params.stop if s) if i >= 0]
                    if hits:
                        stop_at, finish = min(hits), "stop"
                        break
                current = torch.tensor([[token]], device=self._device)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        if stop_at is not None:
            text = text[:stop_at]
        return ChatResponse(
            text=text,
            model=self._name,
            finish_reason=finish,
            prompt_tokens=len(prompt),
            completion_tokens=len(ids),
            token_ids=tuple(ids),
            logprobs=tuple(logprobs),
        )

    @staticmethod
    def _sample(torch: Any, logits: Any, params: SamplingParams, generator: Any) -> int:
        if params.temperature <= 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / params.temperature, dim=-1)
        if params.top_p < 1.0:
            sorted_probs, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < params.top_p
            sorted_probs = torch.where(keep, sorted_probs, torch.zeros_like(sorted_probs))
            choice = torch.multinomial(sorted_probs / sorted_probs.sum(), 1, generator=generator)
            return int(order[choice])
        return int(torch.multinomial(probs, 1, generator=generator))


def from_spec(rest: str) -> TransformersChatModel:
    """Builds a model from the part of an ``hf:<rest>`` spec after the colon: a local folder or ``.gguf`` file.

    Raises:
        ConfigError: ``rest`` is not a local model (a hub id is rejected: toolemu never downloads).
    """
    return TransformersChatModel(rest)
