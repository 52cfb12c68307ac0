"""How the sandbox's Python interpreter starts: in the shell's user and pid namespaces, as OpenHands' Jupyter
kernel lived beside its bash, following the shell's working directory. Used by ``Sandbox.run_python``."""

from __future__ import annotations

import os

from toolemu.core.errors import SandboxError
from toolemu.toolkits.sandbox._procfs import inner_pid
from toolemu.toolkits.sandbox.bwrap import owning_user_namespace
from toolemu.toolkits.sandbox.session import Namespaces, Session

KERNEL_MOUNT = "/opt/toolemu/kernel"
"""Where the interpreter's driver scripts appear in the sandbox (read-only)."""
KERNEL_DRIVERS = ("python_repl", "ipython_magic")
"""The driver scripts (``toolemu.toolkits.sandbox.drivers``) of that folder."""
RESTARTED = ("[toolemu: the Python interpreter was not running (it was killed or exited); this cell ran in a "
             "fresh one, so earlier variables and imports are gone]\n")
"""The note before the output of a cell that found the interpreter gone (a Jupyter kernel restart)."""


def kernel_argv(python: str, folder: str, shell: Session | None) -> list[str]:
    """The interpreter's command line: the driver in ``folder``, following ``shell``'s working directory (by
    its pid inside the sandbox) when that is known."""
    argv = [python, "-I", "-u", f"{folder}/python_repl.py"]
    host_pid = shell.main_pid() if shell is not None else None
    inside = inner_pid(host_pid) if host_pid is not None else None
    return argv + (["--follow-cwd", str(inside)] if inside is not None else [])


def shell_namespaces(shell: Session | None) -> Namespaces:
    """Opens the shell's user and pid namespaces for the interpreter to start in (starting the shell if it ended).

    Raises:
        SandboxError: When there is no shell or it does not come up.
    """
    if shell is None:
        raise SandboxError("the sandbox has no shell yet; call Sandbox.reset(environment) first")
    shell.revive()
    shell.wait_ready()  # bwrap moves a non-root sandbox into a nested user namespace during its set-up
    user = shell.namespace_fd("user")
    pid = shell.namespace_fd("pid") if user is not None else None
    if user is None or pid is None:
        if user is not None:
            os.close(user)
        raise SandboxError("the sandbox shell did not start, so the Python interpreter cannot join it")
    try:
        outer = owning_user_namespace(user)
    except SandboxError:
        os.close(user)
        os.close(pid)
        raise
    return Namespaces(user=user, pid=pid) if outer is None else Namespaces(user=outer, pid=pid, nested_user=user)
