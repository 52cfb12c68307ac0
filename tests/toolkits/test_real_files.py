"""Tests of ``FilesToolkit`` over a real sandbox: operations, path rules, errors, logging."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import JsonValue

from toolemu.core.errors import ToolCallError
from toolemu.core.types import EnvironmentSpec, SeedFile, ToolCall
from toolemu.toolkits.real import FilesToolkit, sandbox_path
from toolemu.toolkits.sandbox import Sandbox

ENV = EnvironmentSpec(files=(SeedFile(path="/workspace/report.md", content="# Q3\n"),))


@pytest.fixture
def files(tmp_path: Path) -> Iterator[FilesToolkit]:
    with Sandbox() as sandbox:
        sandbox.reset(ENV)
        yield FilesToolkit(sandbox)


def _call(kit: FilesToolkit, tool: str, **arguments: JsonValue) -> object:
    return json.loads(kit.call(ToolCall(tool=tool, arguments=arguments), []).observation)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a.txt", "/workspace/a.txt"),
        ("/etc/hosts", "/etc/hosts"),
        ("../home/user/x", "/home/user/x"),
        ("//tmp/y", "/tmp/y"),
    ],
    ids=["relative", "etc", "dotdot-inside", "double-slash"],
)
def test_sandbox_path_normalises(raw: str, expected: str) -> None:
    assert sandbox_path(raw) == expected


@pytest.mark.parametrize(
    "raw",
    ["/usr/bin/ls", "../../opt/.ssh/id_rsa", "/", "/proc/1/environ", " "],
    ids=["usr", "escape", "root", "proc", "blank"],
)
def test_sandbox_path_rejects_outside(raw: str) -> None:
    with pytest.raises(ToolCallError, match="InvalidRequestException"):
        sandbox_path(raw)


@pytest.mark.sandbox
def test_files_write_read_list_delete(files: FilesToolkit) -> None:
    assert _call(files, "FilesWrite", path="notes/todo.txt", content="buy milk\n") == {"success": True}
    assert _call(files, "FilesWrite", path="notes/todo.txt", content="call bob\n", append=True) == {
        "success": True
    }
    assert _call(files, "FilesRead", path="/workspace/notes/todo.txt") == {
        "content": "buy milk\ncall bob\n",
        "truncated": False,
    }
    listing = _call(files, "FilesList", path="/workspace")
    assert isinstance(listing, dict)
    assert [(e["name"], e["type"]) for e in listing["entries"]] == [("notes", "dir"), ("report.md", "file")]
    assert listing["entries"][1]["size"] == 5
    assert _call(files, "FilesDelete", path="notes", recursive=True) == {"success": True}
    assert not (files.sandbox.root / "workspace" / "notes").exists()
    assert [c.tool for c in files.sandbox.commands] == [
        "FilesWrite",
        "FilesWrite",
        "FilesRead",
        "FilesList",
        "FilesDelete",
    ]
    assert files.sandbox.final_state().file("/workspace/notes/todo.txt") is None


@pytest.mark.sandbox
def test_files_errors_are_agent_facing(files: FilesToolkit) -> None:
    with pytest.raises(ToolCallError, match=re.escape("NotFoundException: FileNotFoundError")):
        _call(files, "FilesRead", path="missing.txt")
    with pytest.raises(ToolCallError, match="outside the accessible folders"):
        _call(files, "FilesWrite", path="/usr/local/bin/evil", content="x")
    with pytest.raises(ToolCallError, match="InvalidRequestException: OSError"):
        _call(files, "FilesDelete", path="/workspace")
    assert files.sandbox.commands[-1].exit_code == 1


@pytest.mark.sandbox
def test_files_resolve_symlinks_inside_the_sandbox(files: FilesToolkit, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host-only")
    files.sandbox.run_shell(f"ln -s {secret} /workspace/leak; ln -s /etc/hosts /workspace/hosts")
    with pytest.raises(ToolCallError, match="NotFoundException"):
        _call(files, "FilesRead", path="leak")
    read = _call(files, "FilesRead", path="hosts")
    assert isinstance(read, dict) and "127.0.1.1\tsandbox" in str(read["content"])


@pytest.mark.sandbox
def test_files_read_is_bounded(files: FilesToolkit) -> None:
    files.sandbox.run_shell("head -c 50000 /dev/zero | tr '\\0' a > big.txt")
    read = _call(files, "FilesRead", path="big.txt")
    assert isinstance(read, dict) and read["truncated"] is True
    assert len(str(read["content"])) == files.sandbox.config.max_output_chars
