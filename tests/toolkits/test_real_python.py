"""Tests of ``PythonToolkit``: a persistent interpreter inside a real sandbox."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolemu.core.types import ToolCall
from toolemu.toolkits.real import PYTHON_SPEC, PythonToolkit
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig

pytestmark = pytest.mark.sandbox


@pytest.fixture
def python(tmp_path: Path) -> Iterator[PythonToolkit]:
    with Sandbox(SandboxConfig(command_timeout_s=2)) as sandbox:
        sandbox.reset()
        yield PythonToolkit(sandbox)


def _run(kit: PythonToolkit, code: str) -> dict[str, object]:
    answer = json.loads(kit.call(ToolCall(tool="PythonExecute", arguments={"code": code}), []).observation)
    assert isinstance(answer, dict)
    return answer


def test_python_spec_shape() -> None:
    assert PYTHON_SPEC.tool_names() == ["PythonExecute"]
    assert [p.name for p in PYTHON_SPEC.tools[0].parameters] == ["code"]


def test_python_state_persists_across_calls(python: PythonToolkit) -> None:
    assert _run(python, "import os\ncount = 41\ndef bump():\n    return count + 1") == {
        "output": "",
        "exit_code": 0,
    }
    assert _run(python, "print('cwd', os.getcwd())\nbump()") == {
        "output": "cwd /workspace\n42\n",
        "exit_code": 0,
    }


def test_python_exception_shows_traceback_and_keeps_state(python: PythonToolkit) -> None:
    _run(python, "kept = 'yes'")
    failed = _run(python, "1 / 0")
    assert failed["exit_code"] == 1
    assert str(failed["output"]).startswith("Traceback") and "ZeroDivisionError" in str(failed["output"])
    assert "_main" not in str(failed["output"])
    assert _run(python, "kept") == {"output": "'yes'\n", "exit_code": 0}
    assert _run(python, "def broken(:")["exit_code"] == 1
    assert _run(python, "import sys; sys.exit(3)")["exit_code"] == 3
    assert _run(python, "kept")["output"] == "'yes'\n"


def test_python_timeout_interrupts_cell_and_keeps_state(python: PythonToolkit) -> None:
    _run(python, "kept = 7")
    slow = _run(python, "while True:\n    pass")
    assert slow["exit_code"] == 124 and "KeyboardInterrupt" in str(slow["output"])
    assert _run(python, "kept") == {"output": "7\n", "exit_code": 0}


def test_python_timeout_interrupts_cell_even_if_the_host_ignores_sigint() -> None:
    # SIG_IGN survives exec: a host process that ignores SIGINT (some runners do) must not make timeouts
    # restart the session and lose its state.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with Sandbox(SandboxConfig(command_timeout_s=2)) as sandbox:
            sandbox.reset()
            python = PythonToolkit(sandbox)
            _run(python, "kept = 7")
            slow = _run(python, "while True:\n    pass")
            assert slow["exit_code"] == 124 and "KeyboardInterrupt" in str(slow["output"])
            assert _run(python, "kept") == {"output": "7\n", "exit_code": 0}
    finally:
        signal.signal(signal.SIGINT, previous)


def test_python_cannot_read_the_request_stream(python: PythonToolkit) -> None:
    assert _run(python, "import sys\nprint(repr(sys.stdin.read()))") == {"output": "''\n", "exit_code": 0}


def test_python_and_terminal_share_the_root(python: PythonToolkit) -> None:
    _run(python, "open('/workspace/from_py.txt', 'w').write('hi')")
    assert python.sandbox.run_shell("cat /workspace/from_py.txt").output == "hi"
    assert python.sandbox.commands[0].tool == "PythonExecute"
