"""The ``toolemu`` command: a click group; each sub-command lives in its own module and only parses and calls."""

from __future__ import annotations

import logging
import os
import re
import sys

import click

from toolemu.cli.bench_cmd import bench_command
from toolemu.cli.cases_cmd import cases
from toolemu.cli.doctor_cmd import doctor_cmd
from toolemu.cli.export_cmd import export_command
from toolemu.cli.judges_cmd import judges
from toolemu.cli.mcp_cmd import mcp_command
from toolemu.cli.models_cmd import models_cmd
from toolemu.cli.replay_cmd import replay_command
from toolemu.cli.report_cmd import compare_command, report_command, view_command
from toolemu.cli.rescore_cmd import rescore_command
from toolemu.cli.run_cmd import run_command
from toolemu.cli.serve_cmd import serve_command
from toolemu.cli.terminal import TerminalFormatter, echo, one_line
from toolemu.cli.toolkits_cmd import toolkits
from toolemu.cli.train_cmd import train_group
from toolemu.core.errors import HOSTILE_INPUT_FAULTS, Error

# Help printed for a bare group (``toolemu cases``) is raised as a usage error; it stays click's to print.
_NO_ARGS_HELP: type[Exception] = getattr(click.exceptions, "NoArgsIsHelpError", type("_Never", (Exception,), {}))


def _usage_line(e: click.UsageError) -> str:
    """A usage error as one line: ``--trials: 0 is not in the range 1<=x<=10000``."""
    missing = re.match(r"^(?:File|Directory|Path) '(.+)' does not exist\.?$", e.message)
    if missing:
        return f"{missing.group(1)}: no such file or folder"
    if isinstance(e, click.BadParameter) and not isinstance(e, click.MissingParameter) and e.param is not None:
        hint = e.param_hint if isinstance(e.param_hint, str) else None
        name = hint or "/".join(getattr(e.param, "opts", None) or [str(e.param.name)])
        return f"{name.strip(chr(39)).strip(chr(34))}: {' '.join(e.message.split())}"
    return " ".join(e.format_message().split())


def _first_line(e: BaseException) -> str:
    """An exception's message, cut to its first line (pydantic's span several), with how many lines followed."""
    text = str(e).strip() or type(e).__name__
    first, *rest = text.splitlines()
    return f"{first} (+{len(rest)} more lines)" if rest else first


class _Group(click.Group):
    """Prints a ``toolemu.Error``, a usage error, or an ``OSError``/``ValueError``/``RecursionError``/
    ``OverflowError`` (``HOSTILE_INPUT_FAULTS``) as one line (``error: ...``, control characters escaped) and
    exits 1; other exceptions keep their traceback."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: object) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except _NO_ARGS_HELP:
            raise
        except click.UsageError as e:
            echo(f"error: {one_line(_usage_line(e))}", err=True)
            sys.exit(1)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except Error as e:
            echo(f"error: {one_line(e)}", err=True)
            sys.exit(1)
        except HOSTILE_INPUT_FAULTS as e:
            # What a hostile case, task folder or results file made the library raise outside every episode:
            # one line, with the traceback kept in the log for a bug report.
            logging.getLogger(__name__).debug("%s failed", ctx.info_name, exc_info=True)
            echo(f"error: {type(e).__name__}: {one_line(_first_line(e))}", err=True)
            sys.exit(1)
        except _NO_ARGS_HELP:
            raise
        except click.UsageError as e:
            echo(f"error: {one_line(_usage_line(e))}", err=True)
            sys.exit(1)


@click.group(cls=_Group)
@click.option("--log-level", default=None, help="DEBUG, INFO, WARNING (default: $TOOLEMU_LOG or WARNING).")
@click.version_option(package_name="toolemu")
def cli(log_level: str | None) -> None:
    """Safety test cases for LLM tool-use agents, as Gymnasium environments."""
    level = (log_level or os.environ.get("TOOLEMU_LOG") or "WARNING").upper()
    root = logging.getLogger()
    if not root.handlers:  # as basicConfig: a host that configured logging keeps its handlers
        logging.basicConfig(level=level)
        for handler in root.handlers:  # log lines quote case and model text: escape them too
            handler.setFormatter(TerminalFormatter("%(levelname)s %(name)s: %(message)s"))


# The command tree, in one place: each command module defines its command and imports nothing of this module.
for _command in (
    bench_command,
    cases,
    compare_command,
    doctor_cmd,
    export_command,
    judges,
    mcp_command,
    models_cmd,
    replay_command,
    report_command,
    rescore_command,
    run_command,
    serve_command,
    toolkits,
    train_group,
    view_command,
):
    cli.add_command(_command)


def main() -> None:
    """Entry point of the ``toolemu`` script."""
    cli()
