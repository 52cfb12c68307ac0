"""Group 1, at run time: a case's Python check and the agent's commands see no host file or variable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.support import (
    ACCEPTED,
    CANARY_TEXT,
    CANARY_VAR,
    NOTHING_LEAKED,
    case_with,
    host_canary,
    make_env,
    make_tree,
)
from toolemu.envs import INFO_CAPTURE, INFO_TRAJECTORY

pytestmark = pytest.mark.sandbox

CHECK = """
import os

def check(final_state):
    leaked = False
    for path in ({canary!r}, "/proc/1/environ", "/proc/self/environ"):
        try:
            leaked = leaked or {text!r} in open(path).read()
        except OSError:
            pass
    leaked = leaked or {var!r} in os.environ
    for target in ({host_out!r}, "/tmp/pwned", "/workspace/pwned"):
        try:
            with open(target, "w") as f:
                f.write("pwned")
        except OSError:
            pass
    return leaked
"""


def _play(env: object, actions: list[str]) -> dict[str, object]:
    env.reset(seed=0)  # type: ignore[attr-defined]
    for action in actions:
        _, _, terminated, truncated, info = env.step(action)  # type: ignore[attr-defined]
        if terminated or truncated:
            return info  # type: ignore[no-any-return]
    raise AssertionError("episode did not end")


@pytest.mark.hostile(NOTHING_LEAKED)
def test_python_check_cannot_read_host_files_or_variables_nor_write_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = host_canary(tmp_path)
    monkeypatch.setenv(CANARY_VAR, CANARY_TEXT)
    host_out = tmp_path / "pwned.txt"
    code = CHECK.format(canary=str(canary), text=CANARY_TEXT, var=CANARY_VAR, host_out=str(host_out))
    folder = make_tree(tmp_path / "case", {
        "case.yaml": case_with(checks=[{"kind": "python", "path": "checks.py", "id": "probe"}]),
        "checks.py": code,
    })
    info = _play(make_env(str(folder / "case.yaml")), ["Final Answer: done"])
    (probe,) = info[INFO_CAPTURE].checks  # type: ignore[attr-defined]
    assert probe.error is None, probe.error
    assert probe.value is False, "the check read the host canary"
    assert not host_out.exists() and not Path("/tmp/pwned").exists()
    assert CANARY_TEXT not in info[INFO_CAPTURE].model_dump_json()  # type: ignore[attr-defined]


def _terminal(command: str) -> str:
    return f"Action: TerminalExecute\nAction Input: {json.dumps({'command': command})}"


@pytest.mark.parametrize("declared", [False, True], ids=[f"{NOTHING_LEAKED}:undeclared-host-variable",
                                                          f"{ACCEPTED}:declared-variable-reaches-sandbox"])
def test_agent_commands_see_only_declared_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declared: bool
) -> None:
    canary = host_canary(tmp_path)
    monkeypatch.setenv(CANARY_VAR, CANARY_TEXT)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + CANARY_TEXT)
    env_vars = {"DECLARED": "case-declared-value"} if declared else {}
    folder = make_tree(tmp_path / "case", {"case.yaml": case_with(environment={"env": env_vars})})
    env = make_env(str(folder / "case.yaml"), real_toolkits=("Terminal",))
    command = f"env; tr '\\0' '\\n' < /proc/1/environ; cat {canary} 2>&1; echo done"
    try:
        info = _play(env, [_terminal(command), "Final Answer: done"])
    finally:
        env.close()
    observation = info[INFO_TRAJECTORY].steps[0].observation  # type: ignore[attr-defined]
    assert "done" in observation
    assert CANARY_TEXT not in observation and CANARY_VAR not in observation
    assert ("case-declared-value" in observation) is declared
