"""Scripts run by the sandbox's own Python interpreter; the host reads their source, never runs them itself."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def driver_source(name: str) -> str:
    """Returns the source text of the driver script ``<name>.py``."""
    return resources.files(__package__).joinpath(f"{name}.py").read_text(encoding="utf-8")


def write_drivers(folder: Path, names: tuple[str, ...]) -> Path:
    """Writes the driver scripts ``<name>.py`` into ``folder`` (made if missing, mode 0755) for a sandbox to bind.

    Returns:
        ``folder``.
    """
    folder.mkdir(mode=0o755, exist_ok=True)
    for name in names:
        path = folder / f"{name}.py"
        path.write_text(driver_source(name), encoding="utf-8")
        path.chmod(0o644)
    return folder
