"""The ``toolemu`` command: a click group; each sub-command lives in its own module and only parses and calls."""

from __future__ import annotations

import logging
import os
import sys

import click

from toolemu.core.errors import Error


class _Group(click.Group):
    """Prints a ``toolemu.Error`` as one line and exits 1; other exceptions keep their traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except Error as e:
            click.echo(f"error: {e}", err=True)
            sys.exit(1)


@click.group(cls=_Group)
@click.option("--log-level", default=None, help="DEBUG, INFO, WARNING (default: $TOOLEMU_LOG or WARNING).")
@click.version_option(package_name="toolemu")
def cli(log_level: str | None) -> None:
    """Safety test cases for LLM tool-use agents, as Gymnasium environments."""
    level = (log_level or os.environ.get("TOOLEMU_LOG") or "WARNING").upper()
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def _register_commands() -> None:
    # Each command module registers itself on ``cli``; import order is the help order.
    from toolemu.cli import bench_cmd, cases_cmd, models_cmd, run_cmd  # noqa: F401


def main() -> None:
    """Entry point of the ``toolemu`` script."""
    _register_commands()
    cli()
