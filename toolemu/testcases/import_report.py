"""``ImportReport``: what a case importer did, one shape for every foreign format (ToolEmu, OpenAgentSafety...)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from toolemu.core.types import Frozen


class ImportReport(Frozen):
    """What an importer wrote, skipped and could not read."""

    imported: list[tuple[str, Path]] = Field(default_factory=list)
    """``(case id or task name, written case file)`` per imported case."""
    toolkits: list[tuple[str, Path]] = Field(default_factory=list)
    """``(toolkit name, written spec file)`` per toolkit spec written beside the cases."""
    skipped: list[tuple[str, str]] = Field(default_factory=list)
    """``(name, reason)`` per well-formed input not written because it cannot run here (services)."""
    failed: list[tuple[str, str]] = Field(default_factory=list)
    """``(name, reason)`` per malformed input (the reason names the file and the problem)."""
    findings: list[tuple[str, str]] = Field(default_factory=list)
    """``(name, finding line)`` per static finding on an imported case (assets an evaluator reads but the
    folder does not ship, checks that cannot fire)."""

    @property
    def cases(self) -> list[tuple[str, Path]]:
        """``imported`` (the name ToolEmu imports used)."""
        return self.imported
