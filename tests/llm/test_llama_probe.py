"""The child-process probe of the llama.cpp build: a real crash becomes a typed error; threads are measured."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.prerequisites import needs
from toolemu.core.errors import LLMBackendError
from toolemu.llm import llama_build
from toolemu.llm.embedded import model_path
from toolemu.llm.llama_probe import candidate_threads, probe

pytestmark = needs(modules=("llama_cpp",), install="pip install 'llama-cpp-python==0.3.36'")

# Executes `ud2`, the instruction reserved to be invalid: the child really dies by SIGILL, as an AMX build does
# on a CPU thread without tile permission.
ILLEGAL_INSTRUCTION = r"""
import ctypes, mmap
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(b"\x0f\x0b")
ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
"""


@pytest.fixture
def gguf() -> Path:
    return model_path("smollm2")


def test_probe_turns_a_real_sigill_into_a_typed_error(
    gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLEMU_CACHE_DIR", str(tmp_path))
    with pytest.raises(LLMBackendError, match=re.escape("crashed with SIGILL")) as err:
        probe(gguf, child_code=ILLEGAL_INSTRUCTION)
    message = str(err.value)
    assert "CPU instructions this machine cannot run" in message
    assert llama_build.REBUILD_COMMAND in message
    assert err.value.retryable is False
    # The crash is cached: the same build fails fast, without another child.
    started = time.perf_counter()
    with pytest.raises(LLMBackendError, match="SIGILL"):
        probe(gguf, child_code=ILLEGAL_INSTRUCTION)
    assert list((tmp_path / "llama-probe").glob("*.json"))
    assert time.perf_counter() - started < 5


def test_probe_reports_a_child_that_fails_without_a_signal(
    gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLEMU_CACHE_DIR", str(tmp_path))
    with pytest.raises(LLMBackendError, match=r"probe decode of .* failed .*boom"):
        probe(gguf, child_code="raise SystemExit('boom')")


@pytest.mark.llama
def test_probe_measures_every_candidate_thread_count(
    gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLEMU_CACHE_DIR", str(tmp_path))
    result = probe(gguf)
    assert sorted(result.rates) == candidate_threads()
    assert all(rate > 0 for rate in result.rates.values())
    assert result.threads in result.rates
    assert "AMX_INT8 = 1" not in result.system_info
    assert probe(gguf) == result  # cached
