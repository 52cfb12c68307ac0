"""Fixtures of the training tests: torch on one thread, a tiny random model folder built once per session."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

_MISSING = [m for m in ("torch", "transformers", "peft") if importlib.util.find_spec(m) is None]


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    if _MISSING:
        pytest.fail(f"training tests need {', '.join(_MISSING)}, which is not installed here: run make setup, or "
                    "pip install -e '.[transformers,training]'", pytrace=False)
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # two-core CI machines, and one thread keeps results exact
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama over the toy words (written once; tests load their own copy of the weights)."""
    from tests.fakes.toy import tiny_policy_folder

    return tiny_policy_folder(tmp_path_factory.mktemp("tiny") / "model")
