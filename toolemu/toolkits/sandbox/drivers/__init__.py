"""Scripts run by the sandbox's own Python interpreter; the host reads their source, never imports them."""

from __future__ import annotations

from importlib import resources


def driver_source(name: str) -> str:
    """Returns the source text of the driver script ``<name>.py``."""
    return resources.files(__package__).joinpath(f"{name}.py").read_text(encoding="utf-8")
