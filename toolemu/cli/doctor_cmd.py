"""``toolemu doctor``: which quotas and time limits bound the sandbox on this machine, one line each."""

from __future__ import annotations

import click

from toolemu.toolkits.sandbox.doctor import limit_lines


@click.command("doctor")
def doctor_cmd() -> None:
    """Print the sandbox's quotas (cgroup v2/v1/none, tmpfs sizes, root size cap) and time limits here."""
    for line in limit_lines():
        click.echo(f"{line.name}: {line.value}")
