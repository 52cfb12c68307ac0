"""Every line the CLI prints goes through here: agent, model, case and tool text is shown with its control
characters escaped (``core.untrusted.terminal_safe``), never sent raw to the operator's terminal."""

from __future__ import annotations

import logging

import click

from toolemu.core.untrusted import terminal_safe


def echo(message: object = "", *, err: bool = False, nl: bool = True) -> None:
    """``click.echo`` of ``message`` with control characters escaped (newlines and tabs kept)."""
    click.echo(terminal_safe(str(message)), err=err, nl=nl)


def one_line(message: object) -> str:
    """``message`` escaped onto one line (newlines too): what an ``error: ...`` line shows.

    Examples:
        >>> one_line("bad value 'a\\nb\\x1b[2J'")
        "bad value 'a\\\\x0ab\\\\x1b[2J'"
    """
    return terminal_safe(str(message), multiline=False)


class TerminalFormatter(logging.Formatter):
    """A log formatter that escapes control characters (log messages quote case and model text)."""

    def format(self, record: logging.LogRecord) -> str:
        """The formatted record, escaped."""
        return terminal_safe(super().format(record))
