"""Tests for ``toolemu models`` (click's CliRunner)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import toolemu.cli.models_cmd
from tests.llm.test_embedded import DIGEST, PARTS, WHOLE, _install_fake_dist
from toolemu.cli.main import cli
from toolemu.llm import embedded
from toolemu.llm.embedded import EmbeddedModel, model_status


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result.output


def test_models_lists_each_packaged_model_with_its_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLEMU_CACHE_DIR", str(tmp_path))
    out = _run("models")
    assert f"model cache: {tmp_path / 'models'}" in out
    for key in embedded.MODELS:
        status = model_status(key)
        assert f"llama:{key}  {status.model.title}" in out
        if not status.installed:
            assert f"install: {status.model.install_command}" in out
    if model_status("embedded").installed:
        assert "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf (not assembled yet" in out
    assert not (tmp_path / "models").exists()  # listing never assembles


def test_models_assemble_joins_installed_models(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    site = tmp_path / "site"
    _install_fake_dist(site, "toolemu-clifake-part1", "1.0", {"toolemu_clifake_part1/p1.bin": PARTS[0]})
    _install_fake_dist(site, "toolemu-clifake-part2", "1.0", {"toolemu_clifake_part2/p2.bin": b"".join(PARTS[1:])})
    monkeypatch.syspath_prepend(str(site))
    fake = EmbeddedModel(
        key="clifake",
        title="CLI fake",
        distributions=("toolemu-clifake-part1", "toolemu-clifake-part2"),
        version="1.0",
        sha256=DIGEST,
        size=len(WHOLE),
        filename="clifake.gguf",
    )
    monkeypatch.setattr(embedded, "MODELS", {"clifake": fake})
    monkeypatch.setattr(toolemu.cli.models_cmd, "MODELS", {"clifake": fake})
    monkeypatch.setenv("TOOLEMU_CACHE_DIR", str(tmp_path / "cache"))
    assert "not assembled yet" in _run("models")
    out = _run("models", "--assemble")
    assert f"{tmp_path / 'cache' / 'models' / 'clifake.gguf'} (0.0 MiB, sha256 verified)" in out
    assert (tmp_path / "cache" / "models" / "clifake.gguf").read_bytes() == WHOLE
