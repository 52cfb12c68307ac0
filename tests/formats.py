"""Where the real samples of foreign formats live: ToolEmu cases/toolkits and OpenAgentSafety task folders.

They sit beside the repository (``../shared/formats``) and are never copied into it; ``$TOOLEMU_FORMATS_DIR``
points elsewhere. Modules that need them call ``require_formats()`` at import.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_DEFAULT = Path(__file__).resolve().parents[1] / ".." / "shared" / "formats"
FORMATS = Path(os.environ.get("TOOLEMU_FORMATS_DIR") or _DEFAULT)
TOOLEMU_FORMATS = FORMATS / "toolemu"
OAS_TASKS = FORMATS / "oas" / "tasks"


def require_formats() -> Path:
    """Returns the formats folder, or skips the calling test module naming where it was looked for."""
    if not (TOOLEMU_FORMATS / "cases_sample.json").is_file():
        reason = f"shared format samples not found at {FORMATS} (set TOOLEMU_FORMATS_DIR)"
        pytest.skip(reason, allow_module_level=True)
    return FORMATS
