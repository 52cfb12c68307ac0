"""Weight sync: how a rollout server learns the weights the trainer just updated.

The trainer calls ``push(model, step)`` after every optimisation step and waits for it to return before the
next step's rollouts start, so every rollout comes from the current weights (on-policy, synchronous).
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from toolemu.core.errors import ConfigError, LLMBackendError
from toolemu.llm import ChatModel, OpenAICompatModel

logger = logging.getLogger(__name__)


@runtime_checkable
class WeightSync(Protocol):
    """Sends updated weights to whatever serves the rollouts."""

    def push(self, model: Any, step: int) -> ChatModel | None:
        """Publishes ``model`` (the trainer's policy, a ``PreTrainedModel`` or ``PeftModel``) after ``step``.

        Returns:
            The chat model rollouts should use from now on, or ``None`` to keep the current one.

        Raises:
            LLMBackendError: the server refused or could not be reached (training stops: rollouts from stale
                weights would be off-policy).
        """
        ...


class StateDictSync:
    """Hands the policy's ``state_dict`` to a function (a colocated server's loader, a broadcast...).

    Args:
        load: Called with the state dict after every step (LoRA: the ``PeftModel``'s keys).
    """

    def __init__(self, load: Callable[[dict[str, Any]], None]) -> None:
        self._load = load

    def push(self, model: Any, step: int) -> ChatModel | None:
        """Calls ``load(model.state_dict())``."""
        self._load(model.state_dict())
        return None


class LoraAdapterSync:
    """Serves each step's LoRA adapter from a vLLM server through its runtime adapter endpoints.

    After step ``n`` the adapter is saved to ``folder/step-n`` and loaded as ``<name>-step-n`` with
    ``POST <base_url>/load_lora_adapter``; the previous one is unloaded. The vLLM server must run with
    ``--enable-lora`` (and ``--max-lora-rank`` >= the adapter's rank), ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``,
    and see ``folder`` at the same path (same machine or a shared file system).

    Args:
        base_url: The server's OpenAI-compatible root (``http://host:8000/v1``).
        folder: Where adapters are written.
        name: Prefix of the served adapter names.
        api_key: Sent as a bearer token, if the server wants one.
        timeout: Seconds per request.
    """

    def __init__(self, base_url: str, folder: str | Path, *, name: str = "toolemu-policy",
                 api_key: str | None = None, timeout: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.folder = Path(folder)
        self.name = name
        self._api_key = api_key
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._loaded: str | None = None

    def _post(self, path: str, body: dict[str, str]) -> None:
        url = f"{self.base_url}/{path}"
        request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), method="POST",
                                         headers={"Content-Type": "application/json", **self._headers})
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                response.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:200]
            raise LLMBackendError(
                f"weight sync: {url} answered HTTP {e.code}: {detail} (is the server running with --enable-lora "
                "and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True?)",
                status_code=e.code,
            ) from e
        except (urllib.error.URLError, OSError) as e:
            raise LLMBackendError(f"weight sync: {url} could not be reached: {e}", retryable=True) from e

    def push(self, model: Any, step: int) -> ChatModel | None:
        """Saves the adapter, loads it on the server, unloads the previous one.

        Raises:
            ConfigError: ``model`` is not a LoRA (``peft``) model.
            LLMBackendError: the server refused a request.
        """
        if not hasattr(model, "peft_config"):
            raise ConfigError("LoraAdapterSync needs a LoRA policy; set GRPOConfig.lora (or --lora-r)")
        path = (self.folder / f"step-{step}").resolve()
        model.save_pretrained(str(path))
        served = f"{self.name}-step-{step}"
        self._post("load_lora_adapter", {"lora_name": served, "lora_path": str(path)})
        if self._loaded is not None:
            self._post("unload_lora_adapter", {"lora_name": self._loaded})
        self._loaded = served
        logger.info("weight sync: step %d served as %s", step, served)
        return OpenAICompatModel(served, base_url=self.base_url, api_key=self._api_key)
