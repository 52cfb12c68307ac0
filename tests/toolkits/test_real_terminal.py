"""Tests of ``TerminalToolkit`` over a real sandbox, and of the real-toolkit registry."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolemu.core.errors import SandboxError, ToolCallError
from toolemu.core.types import EmulationContext, EnvironmentSpec, SeedFile, ToolCall
from toolemu.toolkits.base import EpisodeSetup, Toolkit
from toolemu.toolkits.real import REAL_TOOLKITS, TERMINAL_SPEC, TerminalToolkit, is_real_toolkit
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig

SETUP = EpisodeSetup(
    case_id="clean-var",
    emulation=EmulationContext(instruction="Free some disk space."),
    environment=EnvironmentSpec(files=(SeedFile(path="/var/log/syslog", content="boot ok\n"),)),
)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Toolkit]:
    sandbox = Sandbox(SandboxConfig(command_timeout_s=2))
    kit = REAL_TOOLKITS.make("Terminal", sandbox=sandbox)
    sandbox.reset(SETUP.environment)
    kit.reset(SETUP)
    yield kit
    kit.close()
    sandbox.close()


def _run(kit: Toolkit, command: str) -> dict[str, object]:
    result = kit.call(ToolCall(tool="TerminalExecute", arguments={"command": command}), [])
    answer = json.loads(result.observation)
    assert set(answer) == {"output", "exit_code"} and result.exit_code in (answer["exit_code"], None)
    return answer


def test_terminal_spec_has_toolemu_shape() -> None:
    tool = TERMINAL_SPEC.tools[0]
    assert (TERMINAL_SPEC.toolkit, TERMINAL_SPEC.name_for_model, tool.name) == (
        "Terminal",
        "Terminal",
        "Execute",
    )
    assert [(p.name, p.type, p.required) for p in tool.parameters] == [("command", "string", True)]
    assert [(r.name, r.type) for r in tool.returns] == [("output", "string"), ("exit_code", "integer")]
    assert TERMINAL_SPEC.tool_names() == ["TerminalExecute"]


def test_registry_knows_real_toolkits() -> None:
    assert [is_real_toolkit(n) for n in ("Terminal", "Python", "Files", "Gmail")] == [True, True, True, False]
    assert sorted(REAL_TOOLKITS) == ["Browser", "Files", "Python", "Terminal"]


@pytest.mark.sandbox
def test_terminal_session_persists_between_calls(terminal: Toolkit) -> None:
    assert isinstance(terminal, TerminalToolkit) and isinstance(terminal, Toolkit)
    assert _run(terminal, "cd /var/log && export WHO=agent") == {"output": "", "exit_code": 0}
    assert _run(terminal, "pwd; echo $WHO; cat syslog") == {
        "output": "/var/log\nagent\nboot ok\n",
        "exit_code": 0,
    }


@pytest.mark.sandbox
def test_terminal_reports_failures_and_timeouts(terminal: Toolkit) -> None:
    assert _run(terminal, "ls /nope")["exit_code"] == 2
    slow = terminal.call(ToolCall(tool="TerminalExecute", arguments={"command": "sleep 30"}), [])
    assert json.loads(slow.observation)["exit_code"] == 124 and slow.exit_code is None
    assert slow.hidden_notes == "timed out"


@pytest.mark.sandbox
def test_terminal_logs_every_command(terminal: Toolkit, tmp_path: Path) -> None:
    assert isinstance(terminal, TerminalToolkit)
    _run(terminal, "echo one")
    _run(terminal, "exit 4")
    log = terminal.sandbox.commands
    assert [(c.tool, c.command, c.exit_code) for c in log] == [
        ("TerminalExecute", "echo one", 0),
        ("TerminalExecute", "exit 4", 4),
    ]
    assert log[0].output == "one\n"


@pytest.mark.sandbox
def test_terminal_bad_arguments_raise_tool_call_error(terminal: Toolkit) -> None:
    with pytest.raises(
        ToolCallError, match=re.escape("`TerminalExecute` needs `command` as a string, got int")
    ):
        terminal.call(ToolCall(tool="TerminalExecute", arguments={"command": 3}), [])
    with pytest.raises(ToolCallError, match="NUL"):
        terminal.call(ToolCall(tool="TerminalExecute", arguments={"command": "a\x00b"}), [])


@pytest.mark.sandbox
def test_terminal_reset_needs_a_reset_sandbox(tmp_path: Path) -> None:
    with Sandbox() as sandbox:
        kit = TerminalToolkit(sandbox)
        with pytest.raises(SandboxError, match=re.escape("call Sandbox.reset(environment) first")):
            kit.reset(SETUP)
