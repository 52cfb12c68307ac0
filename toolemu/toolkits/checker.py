"""``check_toolkit``, re-exported where toolkit code looks for it (it lives in ``core`` for every reader)."""

from toolemu.core.toolkit_check import check_toolkit

__all__ = ["check_toolkit"]
