"""The sandbox account follows the case's ``environment.user``: names, home folder, ``/etc/passwd``, ``$HOME``."""

from __future__ import annotations

import re

import pytest

from toolemu.core.errors import SandboxError
from toolemu.core.types import EnvironmentSpec, SeedFile
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig
from toolemu.toolkits.sandbox.bwrap import home_of
from toolemu.toolkits.sandbox.seed import etc_files

pytestmark = pytest.mark.sandbox

WHO = "echo $HOME; whoami; echo $USER $LOGNAME; id -u; stat -c '%U %u %a' ~; getent passwd $(id -u); id -gn"


def test_sandbox_user_dev_has_its_name_and_home_everywhere() -> None:
    env = EnvironmentSpec(user="dev", files=(SeedFile(path="/workspace/a.txt", content="a\n"),))
    with Sandbox(SandboxConfig(command_timeout_s=5)) as sb:
        sb.reset(env)
        got = sb.run_shell(WHO).output
        assert got == ("/home/dev\ndev\ndev dev\n1000\ndev 1000 755\ndev:x:1000:1000:dev:/home/dev:/bin/bash\n"
                       "dev\n"), got
        assert sb.run_shell("cd && pwd; ls -d /home/*").output == "/home/dev\n/home/dev\n"
        cell = sb.run_python("import os, pathlib, pwd; print(pathlib.Path.home(), pwd.getpwuid(os.getuid()).pw_name)")
        assert cell.output.strip() == "/home/dev dev"
        assert sb.run_shell("mkdir -p ~/.ssh && echo k > ~/.ssh/x && echo ok").output == "ok\n"
        sb.stop()
        state = sb.final_state()
    record = state.file("/home/dev/.ssh/x")
    assert record is not None and record.content == "k\n"
    assert state.file("/etc/passwd") is not None and "dev:x:1000:1000:dev:/home/dev:" in (
        state.file("/etc/passwd").content or "")  # type: ignore[union-attr]


def test_sandbox_user_default_is_user_and_switches_per_reset() -> None:
    with Sandbox(SandboxConfig(command_timeout_s=5)) as sb:
        sb.reset(EnvironmentSpec())
        assert sb.run_shell("echo $HOME; whoami").output == "/home/user\nuser\n"
        sb.reset(EnvironmentSpec(user="alice"))
        assert sb.run_shell("echo $HOME; whoami; ls /home").output == "/home/alice\nalice\nalice\n"
        sb.reset(EnvironmentSpec())
        assert sb.run_shell("echo $HOME; whoami; ls /home").output == "/home/user\nuser\nuser\n"


def test_sandbox_oas_profile_stays_root_with_home_root() -> None:
    from toolemu.toolkits.sandbox import oas_image

    try:
        oas_image.built_env_dir()
    except SandboxError as e:
        pytest.fail(f"the oas image is not built here: {e}; run make setup", pytrace=False)
    with Sandbox(SandboxConfig(command_timeout_s=5)) as sb:
        sb.reset(EnvironmentSpec(sandbox_profile="oas"))
        assert sb.run_shell("echo $HOME; whoami; echo $USER $LOGNAME").output == "/root\nroot\nroot root\n"
    assert EnvironmentSpec(sandbox_profile="oas").home == "/root"


@pytest.mark.parametrize("user", ["Dev", "root", "a b", "../x", ""], ids=["upper", "reserved", "space", "dots",
                                                                        "empty"])
def test_home_of_refuses_an_invalid_account_name(user: str) -> None:
    with pytest.raises(SandboxError, match=re.escape(f"sandbox user {user!r} is not a valid account name")):
        home_of(user)
    with pytest.raises(SandboxError, match=re.escape(f"sandbox user {user!r}")):
        etc_files(user)
