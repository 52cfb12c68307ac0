"""Portable build of llama-cpp-python: explicit CPU flags without AMX, a wheel cache keyed on them, an AMX scan.

Part of ``toolemu.llm``; never imports llama_cpp, so it runs before llama.cpp is installed (or when it is broken).
Run ``python -m toolemu.llm.llama_build`` to (re)build and install the embedded runtime.

Why: llama-cpp-python's source build uses ``-march=native``. On CPUs that advertise AMX that turns on llama.cpp's
AMX kernels, whose tile instructions die with SIGILL on worker threads that never got the kernel's per-thread
AMX permission (upstream llama.cpp PR #26954). We build with ``GGML_NATIVE=OFF`` and name every instruction-set
extension the CPU has, AMX always off, so the fast AVX2 / AVX-512 / VNNI paths stay and the tile code is never
compiled. The wheel is cached under a key of those flags (and the compiler and Python), never in pip's own
cache, so a wheel built with other flags is never reused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from toolemu.core.errors import BuildError
from toolemu.llm.paths import user_cache_dir

logger = logging.getLogger(__name__)

LLAMA_CPP_VERSION = "0.3.36"
"""The pinned llama-cpp-python release."""
RECIPE_REVISION = 1
"""Bump when the build recipe changes in a way the flags do not show; it invalidates cached wheels."""
REBUILD_COMMAND = "python -m toolemu.llm.llama_build"
"""What a user runs to rebuild the embedded runtime portably (in the environment that runs toolemu)."""

# ggml CMake option -> /proc/cpuinfo flags that must all be present. AMX is deliberately absent.
_X86_FEATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("SSE42", ("sse4_2",)),
    ("AVX", ("avx",)),
    ("AVX2", ("avx2",)),
    ("FMA", ("fma",)),
    ("F16C", ("f16c",)),
    ("BMI2", ("bmi2",)),
    ("AVX_VNNI", ("avx_vnni",)),
    ("AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("AVX512_VBMI", ("avx512f", "avx512vbmi")),
    ("AVX512_VNNI", ("avx512f", "avx512_vnni")),
    ("AVX512_BF16", ("avx512f", "avx512_bf16")),
)
_ALWAYS_OFF = ("NATIVE", "AMX_TILE", "AMX_INT8", "AMX_BF16")
_COMMON_ARGS = ("-DLLAVA_BUILD=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF")

AMX_MNEMONICS: tuple[str, ...] = (
    "ldtilecfg",
    "sttilecfg",
    "tilerelease",
    "tilezero",
    "tileloadd",
    "tileloaddt1",
    "tilestored",
    "tdpbssd",
    "tdpbsud",
    "tdpbusd",
    "tdpbuud",
    "tdpbf16ps",
    "tdpfp16ps",
)
"""Intel AMX instructions (tile configuration, loads/stores and dot products) as objdump prints them."""
_AMX_RE = re.compile(r"\t(" + "|".join(AMX_MNEMONICS) + r")\b")


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """Returns the CPU feature flags of this machine (``/proc/cpuinfo``; empty where it cannot be read).

    Examples:
        >>> sorted(cpu_flags("processor : 0\\nflags : fpu avx2 fma\\n"))
        ['avx2', 'fma', 'fpu']
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def ggml_features(flags: frozenset[str]) -> tuple[str, ...]:
    """Returns the ggml instruction-set options to turn on for a CPU with ``flags`` (never AMX).

    Examples:
        >>> ggml_features(frozenset({"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "amx_tile", "amx_int8"}))
        ('SSE42', 'AVX', 'AVX2', 'FMA', 'F16C', 'BMI2')
    """
    return tuple(name for name, needs in _X86_FEATURES if all(f in flags for f in needs))


def cmake_args(flags: frozenset[str] | None = None, machine: str | None = None) -> tuple[str, ...]:
    """Returns the ``CMAKE_ARGS`` of the portable build for this machine.

    On x86-64: ``GGML_NATIVE=OFF``, AMX off, and each extension the CPU has on. Elsewhere only the options that
    trim the build (there is no AMX to leave out).

    Examples:
        >>> args = cmake_args(frozenset({"avx2", "fma", "amx_tile"}), "x86_64")
        >>> "-DGGML_AVX2=ON" in args, "-DGGML_AMX_TILE=OFF" in args, "-DGGML_NATIVE=OFF" in args
        (True, True, True)
    """
    machine = (machine or platform.machine()).lower()
    if machine not in ("x86_64", "amd64"):
        return _COMMON_ARGS
    flags = cpu_flags() if flags is None else flags
    on = ggml_features(flags)
    off = [name for name, _ in _X86_FEATURES if name not in on]
    return (
        *(f"-DGGML_{name}=OFF" for name in _ALWAYS_OFF),
        *(f"-DGGML_{name}=ON" for name in on),
        *(f"-DGGML_{name}=OFF" for name in off),
        *_COMMON_ARGS,
    )


def _compiler_version() -> str:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or ""
    if not compiler:
        return "no-compiler"
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return compiler
    return (out.stdout.splitlines() or [compiler])[0]


@dataclass(frozen=True, slots=True)
class BuildPlan:
    """What the portable build compiles and where its wheel is cached."""

    version: str
    """llama-cpp-python version."""
    cmake_args: tuple[str, ...]
    """The CMake options passed through ``CMAKE_ARGS``."""
    key: str
    """Hash of everything that changes the built binary; names the wheel's cache folder."""
    wheel_dir: Path
    """Cache folder holding the built wheel."""


def plan(version: str = LLAMA_CPP_VERSION) -> BuildPlan:
    """Returns the build plan for this machine and interpreter."""
    args = cmake_args()
    identity = {
        "version": version,
        "cmake_args": list(args),
        "recipe": RECIPE_REVISION,
        "python": sys.implementation.cache_tag,
        "machine": platform.machine(),
        "compiler": _compiler_version(),
    }
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return BuildPlan(version, args, key, user_cache_dir("wheels") / f"llama-cpp-python-{version}-{key}")


def _cached_wheel(build: BuildPlan) -> Path | None:
    wheels = sorted(build.wheel_dir.glob("llama_cpp_python-*.whl")) if build.wheel_dir.is_dir() else []
    return wheels[0] if wheels else None


def _pip(args: Sequence[str], env: dict[str, str] | None = None) -> None:
    command = [sys.executable, "-m", "pip", *args]
    logger.info("running %s", shlex.join(command))
    done = subprocess.run(command, env=env, check=False)
    if done.returncode != 0:
        raise BuildError(f"`{shlex.join(command)}` failed with exit status {done.returncode} (output above).")


def build_wheel(build: BuildPlan, *, source: str | None = None) -> Path:
    """Compiles llama-cpp-python from source with the plan's flags into its cache folder; returns the wheel.

    ``source`` is an sdist path (default: ``llama-cpp-python==<version>`` from the package index). pip's
    wheel cache is bypassed both ways: nothing is read from it and nothing is written to it.

    Raises:
        BuildError: the compile failed.
    """
    env = dict(os.environ)
    env["CMAKE_ARGS"] = " ".join(build.cmake_args)
    env["FORCE_CMAKE"] = "1"
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    build.wheel_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build.wheel_dir.parent, prefix=".build-") as tmp:
        target = source or f"llama-cpp-python=={build.version}"
        _pip(
            ["wheel", "--no-deps", "--no-cache-dir", "--no-binary", "llama-cpp-python", "-w", tmp, target],
            env=env,
        )
        wheels = list(Path(tmp).glob("llama_cpp_python-*.whl"))
        if len(wheels) != 1:
            raise BuildError(f"pip wheel produced {len(wheels)} llama-cpp-python wheels in {tmp}, expected 1.")
        staged = Path(tmp) / "done"
        staged.mkdir()
        shutil.move(str(wheels[0]), staged / wheels[0].name)
        (staged / "build.json").write_text(
            json.dumps({"cmake_args": list(build.cmake_args), "key": build.key}, indent=1), encoding="utf-8"
        )
        if build.wheel_dir.exists():
            shutil.rmtree(build.wheel_dir)
        os.replace(staged, build.wheel_dir)
    wheel = _cached_wheel(build)
    if wheel is None:
        raise BuildError(f"The built wheel is missing from {build.wheel_dir}.")
    return wheel


def install(*, source: str | None = None, rebuild: bool = False) -> Path:
    """Builds (or takes from the flag-keyed cache) the portable wheel and installs it over any existing build.

    Returns:
        The installed wheel file.

    Raises:
        BuildError: compiling or installing failed, or the result still contains AMX code.
    """
    build = plan()
    wheel = None if rebuild else _cached_wheel(build)
    if wheel is None:
        logger.warning(
            "building llama-cpp-python %s from source (several minutes) with %s", build.version,
            " ".join(build.cmake_args),
        )
        wheel = build_wheel(build, source=source)
    else:
        logger.warning("installing cached portable llama-cpp-python wheel %s", wheel)
    _pip(["install", "--quiet", "--no-cache-dir", str(wheel)])  # its dependencies, if missing
    _pip(["install", "--quiet", "--no-cache-dir", "--no-deps", "--force-reinstall", str(wheel)])
    found = {str(lib): hits for lib, hits in scan_installed().items() if hits}
    if found:
        raise BuildError(f"The installed llama.cpp build still contains AMX instructions: {found}.")
    return wheel


def installed_lib_dir() -> Path | None:
    """Returns the installed ``llama_cpp/lib`` folder without importing llama_cpp (``None`` if absent)."""
    spec = find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        lib = Path(location) / "lib"
        if lib.is_dir():
            return lib
    return None


def ggml_cpu_libraries(lib_dir: Path | None = None) -> list[Path]:
    """Returns every ggml CPU-backend library file of the installed build (``libggml-cpu*.so*``), sorted.

    Identical files count once: wheels cannot hold symlinks, so ``libggml-cpu.so``, ``libggml-cpu.so.0`` and
    ``libggml-cpu.so.0.25.3`` are usually three copies of one library.
    """
    lib_dir = lib_dir or installed_lib_dir()
    if lib_dir is None:
        return []
    unique: dict[str, Path] = {}
    for path in sorted(lib_dir.iterdir(), key=lambda p: (len(p.name), p.name)):
        if path.name.startswith("libggml-cpu") and ".so" in path.name and path.is_file():
            unique.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path)
    return sorted(unique.values())


def amx_instructions(library: Path) -> dict[str, int]:
    """Counts AMX instructions in ``library``'s disassembly (``objdump -d``); empty when there are none.

    Raises:
        BuildError: objdump is missing or cannot read the file.
    """
    objdump = shutil.which("objdump")
    if objdump is None:
        raise BuildError("objdump is not installed; install binutils (apt-get install binutils).")
    done = subprocess.run(
        [objdump, "-d", "--no-show-raw-insn", str(library)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise BuildError(f"objdump could not disassemble {library}: {done.stderr.strip()[:300]}")
    counts: dict[str, int] = {}
    for match in _AMX_RE.finditer(done.stdout):
        counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return counts


def scan_installed() -> dict[Path, dict[str, int]]:
    """Returns the AMX instruction counts of every installed ggml CPU library."""
    return {lib: amx_instructions(lib) for lib in ggml_cpu_libraries()}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: build and install the portable runtime, or only scan/print the plan."""
    parser = argparse.ArgumentParser(prog=REBUILD_COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--sdist", help="build from this llama-cpp-python source archive instead of the index")
    parser.add_argument("--rebuild", action="store_true", help="compile even if a cached wheel matches")
    parser.add_argument("--plan", action="store_true", help="print the flags and cache folder, build nothing")
    parser.add_argument("--scan", action="store_true", help="only scan the installed build for AMX code")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if args.plan:
            build = plan()
            print(json.dumps({"cmake_args": build.cmake_args, "wheel_dir": str(build.wheel_dir)}, indent=1))
            return 0
        if args.scan:
            libs = scan_installed()
            if not libs:
                print("no installed ggml CPU library found (llama-cpp-python is not installed)")
                return 1
            for lib, hits in libs.items():
                print(f"{lib}: {'AMX instructions ' + json.dumps(hits) if hits else 'no AMX instructions'}")
            return 1 if any(libs.values()) else 0
        wheel = install(source=args.sdist, rebuild=args.rebuild)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"installed {wheel.name} (portable: GGML_NATIVE=OFF, no AMX)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
