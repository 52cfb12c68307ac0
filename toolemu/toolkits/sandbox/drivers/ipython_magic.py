"""IPython's shell escapes and magics for the sandbox's Python interpreter, as OpenHands' Jupyter kernel ran them.

A cell that is not valid Python is rewritten the way IPython rewrites it: ``!cmd`` and ``x = !cmd`` lines, ``%pip``,
``%cd``, ``%pwd``, ``%ls``, ``%env`` line magics and ``%%bash``, ``%%sh``, ``%%script``, ``%%writefile`` cells become
calls of ``get_ipython()`` (put in the cell's namespace); ``{expr}`` and ``$name`` in a command are filled in
from the namespace unless one of them fails (then the command runs as written, as in IPython). Runs on the
sandbox's own Python (read from the driver folder); the host never runs it.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys

_BANG = re.compile(r"^(\s*)!(.*)$")
_ASSIGN_BANG = re.compile(r"^(\s*)([A-Za-z_][\w.]*)\s*=\s*!(.*)$")
_LINE_MAGIC = re.compile(r"^(\s*)%([A-Za-z_]\w*)\s?(.*)$")
_EXPAND = re.compile(r"\$\$|\$([A-Za-z_]\w*)|\{\{|\}\}|\{([^{}]*)\}")
_SHELLS = {"bash": "/bin/bash", "sh": "/bin/sh"}


class UsageError(Exception):
    """A magic that does not exist or was misused (printed as IPython prints it: one line)."""


class SList(list):  # type: ignore[type-arg]
    """What ``x = !cmd`` gives: the output's lines, with ``.n`` (joined by newlines), ``.s`` (by spaces), ``.l``."""

    @property
    def n(self) -> str:
        return "\n".join(self)

    @property
    def s(self) -> str:
        return " ".join(self)

    @property
    def l(self) -> list[str]:  # noqa: E743
        return list(self)


def translate(source: str) -> str:
    """Returns ``source`` with its magics rewritten as calls; valid Python is returned unchanged.

    Examples:
        >>> translate("!ls -l")
        "get_ipython().system('ls -l')"
        >>> translate("x = 1 % 2")
        'x = 1 % 2'
    """
    try:
        ast.parse(source)
        return source
    except SyntaxError:
        pass
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name, _, args = lines[first].strip()[2:].partition(" ")
        body = "\n".join(lines[first + 1 :])
        return f"get_ipython().run_cell_magic({name!r}, {args.strip()!r}, {body!r})"
    out, in_string = [], None
    for line in lines:
        if in_string is None:
            line = _translate_line(line)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 and in_string in (None, quote):
                in_string = None if in_string == quote else quote
        out.append(line)
    return "\n".join(out)


def _translate_line(line: str) -> str:
    found = _ASSIGN_BANG.match(line)
    if found:
        return f"{found.group(1)}{found.group(2)} = get_ipython().getoutput({found.group(3)!r})"
    found = _BANG.match(line)
    if found:
        return f"{found.group(1)}get_ipython().system({found.group(2)!r})"
    found = _LINE_MAGIC.match(line)
    if found:
        return f"{found.group(1)}get_ipython().run_line_magic({found.group(2)!r}, {found.group(3)!r})"
    return line


class Shell:
    """The ``get_ipython()`` object of a cell namespace: shell escapes and the supported magics."""

    def __init__(self, namespace: dict[str, object]) -> None:
        self.user_ns = namespace

    def var_expand(self, text: str) -> str:
        """Fills ``{expr}`` and ``$name`` from the namespace; any failure leaves ``text`` as it is (IPython)."""

        def one(found: re.Match[str]) -> str:
            token = found.group(0)
            if token in ("$$", "{{", "}}"):
                return token[0]
            if found.group(1) is not None:
                return str(self.user_ns[found.group(1)])
            return str(eval(found.group(2), self.user_ns))

        try:
            return _EXPAND.sub(one, text)
        except Exception:
            return text

    def system(self, cmd: str) -> None:
        """``!cmd``: runs it in ``/bin/bash`` with the cell's working directory; its output is the cell's."""
        sys.stdout.flush()
        sys.stderr.flush()
        code = subprocess.call(["/bin/bash", "-c", self.var_expand(cmd)], stdin=subprocess.DEVNULL)
        self.user_ns["_exit_code"] = code

    def getoutput(self, cmd: str) -> SList:
        """``x = !cmd``: the command's output (stdout and stderr) as a list of lines."""
        done = subprocess.run(["/bin/bash", "-c", self.var_expand(cmd)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
        self.user_ns["_exit_code"] = done.returncode
        return SList(done.stdout.decode("utf-8", "replace").splitlines())

    def run_line_magic(self, name: str, line: str) -> object:
        """``%name line`` for ``pip``, ``cd``, ``pwd``, ``ls`` and ``env``."""
        line = self.var_expand(line)
        if name == "pip":
            self.system(f"{sys.executable} -m pip {line}")
            importlib.invalidate_caches()
            print("Note: you may need to restart the kernel to use updated packages.")
            return None
        if name == "cd":
            os.chdir(os.path.expanduser(line.strip().strip("'\"") or "~"))
            print(os.getcwd())
            return None
        if name == "pwd":
            return os.getcwd()
        if name == "ls":
            self.system(f"ls {line}")
            return None
        if name == "env":
            return self._env(line.strip())
        raise UsageError(f"Line magic function `%{name}` not found.")

    def run_cell_magic(self, name: str, args: str, body: str) -> None:
        """``%%name args`` cells for ``bash``, ``sh``, ``script <shell>`` and ``writefile [-a] <file>``."""
        if name == "script" and args.split()[:1]:
            name, args = args.split()[0].rsplit("/", 1)[-1], ""
        if name in _SHELLS:
            sys.stdout.flush()
            sys.stderr.flush()
            self.user_ns["_exit_code"] = subprocess.call([_SHELLS[name], "-c", body], stdin=subprocess.DEVNULL)
            return
        if name == "writefile":
            words = args.split()
            append = "-a" in words or "--append" in words
            paths = [w for w in words if not w.startswith("-")]
            if not paths:
                raise UsageError("the following arguments are required: filename")
            path = os.path.expanduser(self.var_expand(paths[0]).strip("'\""))
            print(("Appending to " if append else "Overwriting " if os.path.exists(path) else "Writing ") + path)
            with open(path, "a" if append else "w", encoding="utf-8") as f:
                f.write(body if body.endswith("\n") else body + "\n")
            return
        raise UsageError(f"Cell magic `%%{name}` not found.")

    def _env(self, line: str) -> object:
        if not line:
            return dict(os.environ)
        key, sep, value = line.replace("=", " ", 1).partition(" ") if "=" in line else (line, "", "")
        if not sep:
            return os.environ.get(key, "")
        os.environ[key.strip()] = value.strip()
        print(f"env: {key.strip()}={value.strip()}")
        return None
