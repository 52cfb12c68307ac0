"""Persistent interpreter loop run inside the sandbox: reads ``<nonce> <nbytes>`` + code, prints a marker.

Cells may use IPython's ``!cmd`` and magics (``ipython_magic``, beside this file). With ``--follow-cwd PID`` the
interpreter moves to the working directory of process ``PID`` (the shell) before a cell whenever the shell's has
changed since the last cell, as OpenHands keeps its Jupyter kernel in the shell's directory. Kept compatible with
older Python 3 releases, since it runs on the sandbox's system interpreter.
"""

from __future__ import annotations

import ast
import importlib
import os
import signal
import site
import sys
import traceback
from typing import BinaryIO

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ipython_magic

del sys.path[0]

_namespace: dict[str, object] = {"__name__": "__main__", "__builtins__": __builtins__}
_shell = ipython_magic.Shell(_namespace)
_namespace["get_ipython"] = lambda: _shell


def _read_exactly(requests: BinaryIO, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = requests.read(count - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _run(source: str) -> None:
    tree = ast.parse(ipython_magic.translate(source), "<cell>", "exec")
    last = None
    if tree.body:
        node = tree.body[-1]
        if isinstance(node, ast.Expr):
            tree.body.pop()
            last = node.value
    exec(compile(tree, "<cell>", "exec"), _namespace)
    if last is not None:
        value = eval(compile(ast.Expression(last), "<cell>", "eval"), _namespace)
        if value is not None:
            print(repr(value))


def _follow(pid: str, last: str | None) -> str | None:
    """Moves to the shell's working directory if it changed since ``last``; returns the one seen now."""
    try:
        now = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return last
    if now != last:
        try:
            os.chdir(now)
        except OSError:
            pass
    return now


def _main() -> None:
    # A timeout interrupts a cell with SIGINT. An ignored SIGINT is inherited through exec (a host process that
    # ignores it, e.g. under some job runners, would pass that on), and Python then installs no handler: put
    # the default KeyboardInterrupt handler back so a timed-out cell unwinds and the session keeps its state.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Started with -I (no cwd or user site on sys.path); the sandbox's PYTHONPATH (the OAS profile's libraries)
    # is still wanted, as a plain `python3` in the shell would see it.
    for entry in reversed(os.environ.get("PYTHONPATH", "").split(os.pathsep)):
        if entry and entry not in sys.path:
            sys.path.insert(0, entry)
    # So is the user site (where `pip install` puts packages), even before it exists: a cell after an install
    # imports what was installed, as a kernel over a system site would.
    user_site = site.getusersitepackages()
    if user_site not in sys.path:
        systems = [i for i, p in enumerate(sys.path) if p.endswith("-packages")]
        sys.path.insert(systems[0] if systems else len(sys.path), user_site)
    follow = sys.argv[sys.argv.index("--follow-cwd") + 1] if "--follow-cwd" in sys.argv else None
    shell_cwd = None
    # Requests arrive on the original stdin; the agent's code (and its children) get /dev/null instead, so
    # they cannot read or forge later requests.
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.stdin = open(os.devnull)
    while True:
        header = requests.readline()
        if not header:
            return
        nonce, count = header.split()
        source = _read_exactly(requests, int(count)).decode("utf-8", "replace")
        status = 0
        if follow is not None:
            shell_cwd = _follow(follow, shell_cwd)
        importlib.invalidate_caches()
        try:
            _run(source)
        except SystemExit as stop:
            code = stop.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
        except ipython_magic.UsageError as error:
            sys.stderr.write(f"UsageError: {error}\n")
            status = 1
        except BaseException as error:
            tb = error.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != "<cell>":
                tb = tb.tb_next
            traceback.print_exception(type(error), error, tb)
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os.write(1, b"\n__TOOLEMU_" + nonce + b"__:" + str(status).encode() + b"\n")


if __name__ == "__main__":
    _main()
