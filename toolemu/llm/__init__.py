"""Chat models: the ``ChatModel`` protocol, the OpenAI-compatible client, fakes, cache, retries, resolution.

Importing this package loads no local-model runtime (llama.cpp, torch, transformers); those load on first use.
"""

from toolemu.llm.backend import ChatModel, ChatResponse, SamplingParams
from toolemu.llm.cache import CachedModel
from toolemu.llm.fake import FakeLLM, RecordingModel, load_fixture
from toolemu.llm.openai_compat import OpenAICompatModel
from toolemu.llm.request import ChatRequest
from toolemu.llm.resolve import MODEL_BACKENDS, default_spec, describe_model, resolve_model, split_spec
from toolemu.llm.retry import RetryPolicy, call_with_retries, count_retries, retry_reason

__all__ = [
    "MODEL_BACKENDS",
    "CachedModel",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "FakeLLM",
    "OpenAICompatModel",
    "RecordingModel",
    "RetryPolicy",
    "SamplingParams",
    "call_with_retries",
    "count_retries",
    "default_spec",
    "describe_model",
    "load_fixture",
    "resolve_model",
    "retry_reason",
    "split_spec",
]
