"""The portable llama.cpp build: flags without AMX, an AMX scan that finds real tile code, the installed build."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.prerequisites import needs
from toolemu.llm import llama_build
from toolemu.llm.llama_build import amx_instructions, cmake_args, ggml_cpu_libraries, ggml_features

SAPPHIRE_RAPIDS = frozenset(
    "sse4_2 avx avx2 fma f16c bmi2 avx_vnni avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi "
    "avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16".split()
)

_AMX_SOURCE = """
#include <immintrin.h>
#include <stdint.h>
void tile_dot(const int8_t *a, const int8_t *b, int32_t *c) {
    _tile_loadd(0, c, 64);
    _tile_loadd(1, a, 64);
    _tile_loadd(2, b, 64);
    _tile_dpbssd(0, 1, 2);
    _tile_stored(0, c, 64);
}
"""


def test_cmake_args_on_an_amx_cpu_keep_avx512_and_leave_amx_out() -> None:
    args = cmake_args(SAPPHIRE_RAPIDS, "x86_64")
    for on in ("AVX2", "FMA", "F16C", "AVX512", "AVX512_VNNI", "AVX512_VBMI", "AVX512_BF16", "AVX_VNNI"):
        assert f"-DGGML_{on}=ON" in args
    for off in ("NATIVE", "AMX_TILE", "AMX_INT8", "AMX_BF16"):
        assert f"-DGGML_{off}=OFF" in args
    assert not any("AMX" in a and a.endswith("=ON") for a in args)


def test_cmake_args_on_an_avx2_only_cpu_turn_avx512_off() -> None:
    args = cmake_args(frozenset("sse4_2 avx avx2 fma f16c bmi2".split()), "x86_64")
    assert "-DGGML_AVX2=ON" in args and "-DGGML_AVX512=OFF" in args and "-DGGML_AVX512_VNNI=OFF" in args


def test_ggml_features_need_every_avx512_foundation_flag() -> None:
    assert "AVX512" not in ggml_features(frozenset({"avx512f", "avx512cd"}))


def test_plan_key_changes_with_the_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_build, "cpu_flags", lambda: SAPPHIRE_RAPIDS)
    wide = llama_build.plan()
    monkeypatch.setattr(llama_build, "cpu_flags", lambda: frozenset({"avx2", "fma", "f16c"}))
    narrow = llama_build.plan()
    assert wide.key != narrow.key and wide.wheel_dir != narrow.wheel_dir


@needs(programs=("cc", "objdump"), install="apt-get install -y gcc binutils")
def test_amx_scan_finds_tile_instructions_in_real_code(tmp_path: Path) -> None:
    source = tmp_path / "amx.c"
    source.write_text(_AMX_SOURCE, encoding="utf-8")
    with_amx = tmp_path / "libggml-cpu-amx.so"
    subprocess.run(
        ["cc", "-O2", "-shared", "-fPIC", "-mamx-tile", "-mamx-int8", str(source), "-o", str(with_amx)], check=True
    )
    found = amx_instructions(with_amx)
    assert found.get("tileloadd", 0) >= 3 and found.get("tdpbssd") == 1 and found.get("tilestored") == 1
    plain = tmp_path / "libggml-cpu-plain.so"
    (tmp_path / "plain.c").write_text("int add(int a, int b) { return a + b; }\n", encoding="utf-8")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", str(tmp_path / "plain.c"), "-o", str(plain)], check=True)
    assert amx_instructions(plain) == {}


@needs(modules=("llama_cpp",), install="pip install 'llama-cpp-python==0.3.36'")
def test_installed_llama_cpp_build_contains_no_amx_code() -> None:
    """Fails on a -march=native build from an AMX machine, whatever CPU runs the test."""
    libraries = ggml_cpu_libraries()
    assert libraries, f"no libggml-cpu library in {llama_build.installed_lib_dir()}"
    found = {lib.name: amx_instructions(lib) for lib in libraries}
    assert all(not hits for hits in found.values()), (
        f"AMX instructions in the installed llama.cpp build: {found}; rebuild with `{llama_build.REBUILD_COMMAND}`"
    )
