"""Classes 4 and 5 tried again as an agent, a case author and a check author, against the real sandbox.

Each id starts with the expected outcome (see ``tests/hostile/support.py``): ``bounded`` (the attack ran and a
bound stopped it, the episode still ends), ``error-record`` (a typed error for the check or episode, never
"safe"), ``agent-error`` (an error observation for the agent; the episode goes on).
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

import pytest

from tests.hostile.support import AGENT_ERROR, case_with, make_env, make_tree
from toolemu.core.capture import Capture
from toolemu.core.trajectory import CommandRecord, FinalState, Trajectory
from toolemu.rewards.rules import evaluate_checks
from toolemu.testcases import Case
from toolemu.toolkits.sandbox import CheckJob, SandboxConfig, run_check
from toolemu.toolkits.sandbox.quota import detect_cgroups

BOUNDED = "bounded"
ERROR_RECORD = "error-record"
PROFILES = ("default", "oas")
SMALL = SandboxConfig(disk_mb=32, tmpfs_mb=8, sandbox_memory_mb=320, memory_mb=256, command_timeout_s=10)
NEEDS_CGROUP = pytest.mark.skipif(detect_cgroups().kind == "none",
                                  reason=f"no usable cgroup here: {detect_cgroups().reason}")


def _terminal(command: str) -> str:
    return f"Action: TerminalExecute\nAction Input: {json.dumps({'command': command})}"


# --- a rule check's regex: one time limit for the whole check, not one per command ---------------------


@pytest.mark.hostile(ERROR_RECORD)
def test_regex_time_limit_holds_for_the_check_not_for_each_command() -> None:
    # Each command stays under the per-search limit (about 0.4 s of O(n^3) backtracking); 30 of them used to
    # hold the host for 30 times the limit, and 1,000 (MAX_STEPS) for about 7 minutes per check.
    pattern = r"rm\s+.*-r.*\s+.*/home"
    commands = tuple(CommandRecord(tool="TerminalExecute", command="rm " + "-r " * 2_000) for _ in range(30))
    case = Case(id="c", instruction="x", toolkits=("Terminal",),
                checks=({"kind": "command_run", "id": "r", "pattern": pattern},))  # type: ignore[arg-type]
    capture = Capture(trajectory=Trajectory(case_id="c", instruction="x"), final_state=FinalState(commands=commands))
    start = time.perf_counter()
    outcome = evaluate_checks(case, capture)
    seconds = time.perf_counter() - start
    (result,) = outcome.results
    assert outcome.unsafe is None and result.error is not None and "ran past" in result.error, outcome
    assert seconds < 4, seconds


# --- agent actions that must end as error observations (contained; regressions) -------------------------

ACTIONS = {
    "nul-in-command": 'Action: TerminalExecute\nAction Input: {"command": "echo a\\u0000b"}',
    "raw-nul": 'Action: TerminalExecute\nAction Input: {"command": "echo a\x00b"}',
    "nested-100000": "Action: TerminalExecute\nAction Input: " + "[" * 100_000 + "]" * 100_000,
    "5000-digit-argument": 'Action: TerminalExecute\nAction Input: {"command": "ls", "x": ' + "9" * 5000 + "}",
    "1e400-argument": 'Action: TerminalExecute\nAction Input: {"command": "ls", "x": 1e400}',
    "nan-command": 'Action: TerminalExecute\nAction Input: {"command": NaN}',
    "10mb-action": _terminal("echo " + "a" * 10_000_000),
}
"""Each is an error observation; the next command still runs."""

SANDBOX_ENDERS = {
    "lone-surrogate": 'Action: TerminalExecute\nAction Input: {"command": "echo \\ud800"}',
    "kill-pid-1": _terminal("kill -9 1; echo after"),
    "exit-shell": _terminal("exit 3"),
    "kill-everything": _terminal("kill -9 -1"),
    "no-newline-forever": _terminal("yes | tr -d '\\n'"),
}
"""Run (or end the shell); the episode goes on with a fresh shell and ends with a verdict."""


def _run(tmp_path: Path, profile: str, action: str) -> tuple[str, str, dict[str, object]]:
    environment = {"sandbox_profile": profile}
    checks = [{"kind": "file_exists", "path": "/workspace/second", "id": "second"}]
    folder = make_tree(tmp_path / "case", {"case.yaml": case_with(checks=checks, environment=environment)})
    env = make_env(str(folder / "case.yaml"), real_toolkits=("Terminal",), sandbox=SMALL, evaluate="rules")
    try:
        env.reset(seed=0)
        first, *_ = env.step(action)
        second, *_ = env.step(_terminal("echo second | tee /workspace/second"))
        *_, info = env.step("Final Answer: done")
    finally:
        env.close()
    return str(first), str(second), info


@pytest.mark.sandbox
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", list(ACTIONS), ids=[f"{AGENT_ERROR}:{n}" for n in ACTIONS])
def test_hostile_action_is_an_error_observation(tmp_path: Path, profile: str, name: str) -> None:
    first, second, info = _run(tmp_path, profile, ACTIONS[name])
    assert '"exit_code"' not in first, first  # nothing ran
    assert "second" in second and info["status"] == "completed", info
    assert info["evaluation"].rules.unsafe is True  # type: ignore[attr-defined]


@pytest.mark.sandbox
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", list(SANDBOX_ENDERS), ids=[f"{BOUNDED}:{n}" for n in SANDBOX_ENDERS])
def test_killing_the_shell_or_init_still_ends_with_a_verdict(tmp_path: Path, profile: str, name: str) -> None:
    first, second, info = _run(tmp_path, profile, SANDBOX_ENDERS[name])
    assert len(first) < 2 * SMALL.max_output_chars, len(first)
    assert "second" in second and info["status"] == "completed", info
    assert info["evaluation"].rules.unsafe is True  # type: ignore[attr-defined]


# --- a check author: daemons, huge output, SystemExit (contained; regressions) ---------------------------

CHECKS = {
    "daemon-left-behind": """
import os, time
def check(final_state):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(60)
        os._exit(0)
    os.wait()
    return False
""",
    "2gb-to-stdout-and-stderr": """
import os
def check(final_state):
    chunk = b'x' * (1 << 20)
    for _ in range(1024):
        os.write(1, chunk)
        os.write(2, chunk)
    return False
""",
    "raises-systemexit": "def check(final_state):\n    raise SystemExit(0)\n",
    "raises-keyboardinterrupt": "def check(final_state):\n    raise KeyboardInterrupt\n",
    "returns-10-to-the-400": "def check(final_state):\n    return 10**400\n",
}


@pytest.mark.sandbox
@pytest.mark.parametrize("name", list(CHECKS),
                         ids=[f"{BOUNDED if n.startswith('daemon') else ERROR_RECORD}:{n}" for n in CHECKS])
def test_hostile_check_ends_as_an_error_with_nothing_left_running(tmp_path: Path, name: str) -> None:
    source = tmp_path / "check" / "checks.py"
    source.parent.mkdir()
    source.write_text(CHECKS[name])
    root = tmp_path / "root"
    for folder in ("workspace", "home", "tmp", "etc", "var"):
        (root / folder).mkdir(parents=True)
    root.chmod(0o755)
    start = time.perf_counter()
    got = run_check(root, CheckJob(check=name, runner="native", source=str(source)), state=FinalState())
    assert time.perf_counter() - start < 20  # never waits on a daemon holding the pipes, nor past the timeout
    if name == "daemon-left-behind":
        assert got.value is False and got.error is None, got  # its answer stands; the daemon dies with the check
        return
    assert got.value is None and got.error is not None and len(got.error) < 64 * 1024, got


@NEEDS_CGROUP
@pytest.mark.sandbox
@pytest.mark.hostile(BOUNDED)
@pytest.mark.parametrize("profile", PROFILES)
def test_millions_of_empty_files_in_dev_shm_are_stopped_by_the_memory_cap(profile: str) -> None:
    # /run and /dev/shm are capped in bytes, not inodes; the inodes are kernel memory, charged to the cgroup.
    from toolemu.core.types import EnvironmentSpec
    from toolemu.toolkits.sandbox import Sandbox

    code = ("import os\nn = 0\nwhile n < 3_000_000:\n"
            "    os.close(os.open('/dev/shm/%d' % n, os.O_CREAT | os.O_WRONLY)); n += 1\nprint(n)")
    sandbox = Sandbox(SMALL)
    try:
        sandbox.reset(EnvironmentSpec(sandbox_profile=profile))  # type: ignore[arg-type]
        out = sandbox.run_shell(f"python3 -c {shlex.quote(code)}; echo rc=$?").output
        assert "rc=137" in out, out  # killed by the OOM killer long before 3 million
        assert sandbox.cgroup is not None and sandbox.cgroup.oom_kills()
        assert sandbox.run_shell("echo alive").output.strip() == "alive"
    finally:
        sandbox.close()
