"""Group 1: a case folder trying to reach the host (files, code, environment variables) is refused at load."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile.support import (
    CANARY_TEXT,
    CANARY_VAR,
    CLEAR_ERROR,
    NOTHING_LEAKED,
    Link,
    assert_refused_everywhere,
    case_with,
    host_canary,
    invoke,
    make_env,
    make_tree,
)
from toolemu.core.errors import CaseError
from toolemu.testcases import load_case

OUTSIDE = "a case may only name files inside its own folder"
Files = Callable[[Path], dict[str, object]]


def _seed(source: str, **env: object) -> dict[str, object]:
    return {"environment": {"files": [{"path": "/workspace/notes.txt", "source": source}], **env}}


def _python(path: str, api: str = "native") -> dict[str, object]:
    return {"checks": [{"kind": "python", "path": path, "api": api}]}


SEED_AND_CHECK_PATHS: list[tuple[str, Files, str]] = [
    ("seed-absolute-etc-passwd", lambda c: {"case.yaml": case_with(**_seed("/etc/passwd"))}, OUTSIDE),
    ("seed-dotdot-etc-passwd", lambda c: {"case.yaml": case_with(**_seed("../../../../../../etc/passwd"))}, OUTSIDE),
    ("seed-proc-self-environ", lambda c: {"case.yaml": case_with(**_seed("/proc/self/environ"))}, OUTSIDE),
    ("seed-dotdot-host-canary", lambda c: {"case.yaml": case_with(**_seed("../host/canary.txt"))}, OUTSIDE),
    ("seed-home-tilde", lambda c: {"case.yaml": case_with(**_seed("~/.ssh/id_rsa"))}, OUTSIDE),
    ("seed-symlink-to-canary",
     lambda c: {"case.yaml": case_with(**_seed("notes.txt")), "notes.txt": Link(str(c))}, OUTSIDE),
    ("seed-relative-symlink-to-canary",
     lambda c: {"case.yaml": case_with(**_seed("notes.txt")), "notes.txt": Link("../host/canary.txt")}, OUTSIDE),
    ("seed-through-symlinked-folder",
     lambda c: {"case.yaml": case_with(**_seed("data/canary.txt")), "data": Link(str(c.parent))}, OUTSIDE),
    ("seed-inside-then-dotdot-out",
     lambda c: {"case.yaml": case_with(**_seed("sub/../../host/canary.txt")), "sub/x": "x"}, OUTSIDE),
    ("base-dir-absolute",
     lambda c: {"case.yaml": case_with(**_seed("canary.txt", base_dir=str(c.parent)))}, "environment.base_dir"),
    ("base-dir-dotdot", lambda c: {"case.yaml": case_with(**_seed("canary.txt", base_dir="../host"))},
     "environment.base_dir"),
    ("base-dir-symlink-out",
     lambda c: {"case.yaml": case_with(**_seed("canary.txt", base_dir="seed")), "seed": Link(str(c.parent))},
     "environment.base_dir"),
    ("seed-source-is-folder",
     lambda c: {"case.yaml": case_with(**_seed("sub")), "sub/a.txt": "a"}, "is not a regular file"),
    ("seed-source-empty", lambda c: {"case.yaml": case_with(**_seed(""))}, "empty path"),
    ("python-check-dotdot", lambda c: {"case.yaml": case_with(**_python("../host/evil.py"))}, OUTSIDE),
    ("python-check-absolute", lambda c: {"case.yaml": case_with(**_python("/tmp/evil.py"))}, OUTSIDE),
    ("python-check-symlink-out",
     lambda c: {"case.yaml": case_with(**_python("checks.py")), "checks.py": Link(str(c))}, OUTSIDE),
    ("oas-evaluator-dotdot",
     lambda c: {"case.yaml": case_with(**_python("../../x/utils/evaluator.py", api="oas"))}, OUTSIDE),
    ("source-dir-claimed-in-file", lambda c: {"case.yaml": case_with(source_dir="/")},
     "source_dir: set by the loader"),
    ("env-value-braced-host-variable",
     lambda c: {"case.yaml": case_with(environment={"env": {"KEY": "${OPENAI_API_KEY}"}})},
     "refers to $OPENAI_API_KEY"),
    ("env-value-bare-host-variable",
     lambda c: {"case.yaml": case_with(environment={"env": {"TOKEN": f"${CANARY_VAR}"}})}, f"refers to ${CANARY_VAR}"),
    ("env-value-embedded-host-variable",
     lambda c: {"case.yaml": case_with(environment={"env": {"URL": "https://x/?k=$AWS_SECRET_ACCESS_KEY"}})},
     "refers to $AWS_SECRET_ACCESS_KEY"),
    ("env-name-not-identifier",
     lambda c: {"case.yaml": case_with(environment={"env": {"BAD-NAME": "x"}})}, "is not a variable name"),
    ("env-name-with-equals",
     lambda c: {"case.yaml": case_with(environment={"env": {"A=B": "x"}})}, "is not a variable name"),
]


@pytest.mark.parametrize(
    ("files", "fragment"),
    [(f, m) for _, f, m in SEED_AND_CHECK_PATHS],
    ids=[f"{CLEAR_ERROR}:{name}" for name, _, _ in SEED_AND_CHECK_PATHS],
)
def test_case_reaching_outside_its_folder_is_refused_at_every_entry_point(
    tmp_path: Path, files: Files, fragment: str
) -> None:
    canary = host_canary(tmp_path)
    folder = make_tree(tmp_path / "case", files(canary))
    message = assert_refused_everywhere(folder / "case.yaml", fragment, tmp_path)
    assert CANARY_TEXT not in message


@pytest.mark.hostile(CLEAR_ERROR)
def test_seed_source_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "case", {"case.yaml": case_with(**_seed("pipe"))})
    os.mkfifo(folder / "pipe")
    with pytest.raises(CaseError, match="is not a regular file"):
        load_case(folder / "case.yaml")


@pytest.mark.parametrize(
    "layout",
    ["toolkits-folder-symlink", "toolkit-file-symlink"],
    ids=[f"{NOTHING_LEAKED}:toolkits-folder-symlink", f"{NOTHING_LEAKED}:toolkit-file-symlink"],
)
def test_toolkit_specs_linked_from_outside_are_refused(tmp_path: Path, layout: str) -> None:
    elsewhere = make_tree(tmp_path / "elsewhere", {"Secret.json": '{"secret": "' + CANARY_TEXT + '"}'})
    link = {"toolkits": Link(str(elsewhere))} if layout == "toolkits-folder-symlink" else {
        "toolkits/Terminal.json": Link(str(elsewhere / "Secret.json"))}
    folder = make_tree(tmp_path / "suite" / "case", {"case.yaml": case_with(), **link})
    with pytest.raises(CaseError, match="outside") as info:
        make_env(str(folder / "case.yaml"))
    assert CANARY_TEXT not in str(info.value)
    validated = invoke("cases", "validate", str(folder / "case.yaml"))
    assert validated.exit_code == 1 and "outside" in validated.output and CANARY_TEXT not in validated.output


@pytest.mark.hostile(NOTHING_LEAKED)
def test_case_dict_without_folder_cannot_name_seed_source() -> None:
    data = case_with(**_seed("/etc/passwd"))
    with pytest.raises(CaseError, match="needs a case loaded from a file"):
        make_env(data)


@pytest.mark.hostile(NOTHING_LEAKED)
def test_canary_host_file_and_variable_cannot_be_read_by_a_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The canary test: every way a case could name a host file or variable fails to load."""
    canary = host_canary(tmp_path)
    monkeypatch.setenv(CANARY_VAR, CANARY_TEXT)
    attempts = {
        "absolute-file": case_with(**_seed(str(canary))),
        "relative-file": case_with(**_seed("../host/canary.txt")),
        "symlinked-file": case_with(**_seed("link.txt")),
        "proc-environ": case_with(**_seed("/proc/self/environ")),
        "env-variable": case_with(environment={"env": {"LEAK": f"${{{CANARY_VAR}}}"}}),
        "python-check": case_with(**_python("../host/canary.txt")),
    }
    for name, data in attempts.items():
        folder = make_tree(tmp_path / name, {"case.yaml": data, "link.txt": Link(str(canary))})
        with pytest.raises(CaseError) as info:
            load_case(folder / "case.yaml")
        message = str(info.value)
        assert CANARY_TEXT not in message, name
        assert "inside its own folder" in message or f"refers to ${CANARY_VAR}" in message, (name, message)
        print(f"{name}: refused: {message}")
