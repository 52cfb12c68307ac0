"""The command tree: composed in ``toolemu.cli.main`` from command modules that never import it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from toolemu.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
COMMAND_MODULES = sorted(p.stem for p in (ROOT / "toolemu" / "cli").glob("*_cmd.py"))


def _names(group: click.Group) -> list[str]:
    return sorted(group.commands)


def test_cli_holds_every_command_once_imported() -> None:
    assert _names(cli) == ["bench", "cases", "compare", "doctor", "export", "judges", "mcp", "models", "replay",
                           "report", "rescore", "run", "serve", "toolkits", "train", "view"]
    cases, train, judges = (cli.commands[name] for name in ("cases", "train", "judges"))
    assert isinstance(cases, click.Group) and isinstance(train, click.Group) and isinstance(judges, click.Group)
    assert _names(cases) == ["import-oas", "import-openhands", "import-toolemu", "list", "schema", "similar",
                             "stats", "validate"]
    assert _names(train) == ["grpo", "guard"]
    assert _names(judges) == ["check"]
    toolkits = cli.commands["toolkits"]
    assert isinstance(toolkits, click.Group) and _names(toolkits) == ["import-mcp"]


def test_command_modules_do_not_import_the_main_module() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {COMMAND_MODULES!r}:\n"
        "    importlib.import_module('toolemu.cli.' + name)\n"
        "print('toolemu.cli.main' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert len(COMMAND_MODULES) == 17
    assert out.stdout.strip() == "False"
