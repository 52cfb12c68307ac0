"""Case importers behind one interface: ``import_cases(format, source, out)`` turns a foreign format into our case
files and says what it did in one ``ImportReport``. ``IMPORTERS`` names the formats (``toolemu``, ``oas``); a new
format is one function taking an ``ImportRequest`` and one ``register_importer`` call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from toolemu.core.errors import ConfigError
from toolemu.core.registry import Registry
from toolemu.testcases.import_report import ImportReport
from toolemu.testcases.oas import import_oas
from toolemu.testcases.toolemu_format import import_toolemu


@dataclass(frozen=True, slots=True)
class ImportRequest:
    """What to import, and where to."""

    source: Path
    """The foreign file or folder (ToolEmu's cases JSON, an OAS task folder or folder of them...)."""
    out: Path
    """The folder to write case files into (created if needed; its parent must exist)."""
    strict: bool = True
    """Stop at the first malformed input before writing anything; ``False`` imports every good one and reports
    each malformed one in ``ImportReport.failed``."""
    toolkits: Path | None = None
    """A toolkit spec file the cases need (ToolEmu's toolkits JSON)."""


Importer = Callable[[ImportRequest], ImportReport]
"""An importer: reads ``request.source``, writes under ``request.out``, reports."""

IMPORTERS: Registry[ImportReport] = Registry("case format")
"""Importers by format name (append-only)."""


def register_importer(name: str, importer: str | Importer) -> None:
    """Registers an importer for the format ``name``.

    Raises:
        ConfigError: ``name`` is already registered.
    """
    IMPORTERS.register(name, importer)


def import_cases(format: str, source: Path, out: Path, *, strict: bool = True,
                 toolkits: Path | None = None) -> ImportReport:
    """Imports ``source`` of ``format`` into case files under ``out``.

    Raises:
        NotRegisteredError: an unknown format (the message suggests one).
        CaseError: malformed input (with ``strict``), naming the file.
        ConfigError: ``out``'s parent folder does not exist, or an option the format does not take.
    """
    return IMPORTERS.make(format, request=ImportRequest(Path(source), Path(out), strict, toolkits))


def _toolemu(request: ImportRequest) -> ImportReport:
    """ToolEmu: ``source`` is the cases JSON, ``toolkits`` the toolkit specs JSON (both required)."""
    if request.toolkits is None:
        raise ConfigError("ToolEmu import needs its toolkit specs: give toolkits=... (--toolkits all_toolkits.json)")
    return import_toolemu(request.source, request.toolkits, request.out)


def _oas(request: ImportRequest) -> ImportReport:
    """OpenAgentSafety: ``source`` is a task folder or a folder of task folders."""
    if request.toolkits is not None:
        raise ConfigError("OAS import takes no toolkit specs (its cases use the sandboxed toolkits); drop toolkits")
    return import_oas(request.source, request.out, strict=request.strict)


register_importer("toolemu", _toolemu)
register_importer("oas", _oas)
