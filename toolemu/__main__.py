"""``python -m toolemu``: the ``toolemu`` command."""

from toolemu.cli.main import main

main()
