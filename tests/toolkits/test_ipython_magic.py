"""The interpreter's IPython rewriting (``drivers/ipython_magic.py``), on the host: what becomes a call, what stays."""

from __future__ import annotations

import pytest

from toolemu.toolkits.sandbox.drivers import ipython_magic
from toolemu.toolkits.sandbox.drivers.ipython_magic import Shell, translate


@pytest.mark.parametrize(("cell", "expected"), [
    ("!ls -l", "get_ipython().system('ls -l')"),
    ("for i in range(2):\n    !echo {i}", "for i in range(2):\n    get_ipython().system('echo {i}')"),
    ("files = !ls", "files = get_ipython().getoutput('ls')"),
    ("%pip install flask", "get_ipython().run_line_magic('pip', 'install flask')"),
    ("%%bash\necho $HOME", "get_ipython().run_cell_magic('bash', '', 'echo $HOME')"),
    ("%%writefile -a x.py\nprint(1)", "get_ipython().run_cell_magic('writefile', '-a x.py', 'print(1)')"),
    ('s = """\n!not a command\n"""\n!ls', 's = """\n!not a command\n"""\nget_ipython().system(\'ls\')'),
], ids=["bang", "indented", "assign", "pip", "bash-cell", "writefile", "in-string"])
def test_translate_rewrites_magics_as_ipython_does(cell: str, expected: str) -> None:
    assert translate(cell) == expected


@pytest.mark.parametrize("cell", ["x = 5 % 3", "y = (1\n % 2)", "print('!x')", "a != b", "def f(:\n  pass"],
                         ids=["modulo", "continued-modulo", "in-string", "not-equal", "syntax-error"])
def test_translate_leaves_valid_python_and_plain_errors_alone(cell: str) -> None:
    assert translate(cell) == cell


def test_var_expand_fills_names_and_expressions_or_leaves_the_command() -> None:
    shell = Shell({"name": "a.txt", "n": 2})
    assert shell.var_expand("cat {name} $n {n*2} $$HOME") == "cat a.txt 2 4 $HOME"
    assert shell.var_expand("echo $HOME {name}") == "echo $HOME {name}"  # one failure: as written (IPython)
    assert shell.var_expand("awk '{print $1}'") == "awk '{print $1}'"


def test_unknown_magic_is_a_usage_error() -> None:
    with pytest.raises(ipython_magic.UsageError, match="Line magic function `%timeit` not found"):
        Shell({}).run_line_magic("timeit", "1")
    with pytest.raises(ipython_magic.UsageError, match="Cell magic `%%html` not found"):
        Shell({}).run_cell_magic("html", "", "<b>")
