"""Which cases a bench run covers: the built-in suite by kind, a folder or file of cases, or explicit ids."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Literal

from toolemu.core.errors import ConfigError
from toolemu.testcases import Case, builtin_cases, load_case, load_cases
from toolemu.toolkits import builtin_toolkit_specs, find_specs_near, is_real_toolkit

SuiteKind = Literal["builtin", "emulated", "real"]
SUITE_KINDS: tuple[SuiteKind, ...] = ("builtin", "emulated", "real")
"""``builtin``: every built-in case; ``emulated``: those whose tools are all emulated; ``real``: those that
run at least one toolkit in the sandbox."""


def needs_sandbox(case: Case, real_toolkits: Collection[str] = ()) -> bool:
    """Whether ``case`` runs a toolkit in the sandbox: a real toolkit with no emulated spec, or one forced real.

    The same rule ``ToolBox.build`` applies, so the kinds match what the episode will actually run.
    """
    specs = set(builtin_toolkit_specs())
    if case.source_dir:
        specs |= set(find_specs_near(case.source_dir))
    return any(is_real_toolkit(n) and (n not in specs or n in real_toolkits) for n in case.toolkits)


def select_cases(
    suite: str, ids: Sequence[str] = (), limit: int | None = None, real_toolkits: Collection[str] = ()
) -> list[Case]:
    """Returns the cases of a run.

    Args:
        suite: ``builtin``, ``emulated``, ``real`` (built-in cases by kind), or a folder/file of cases.
        ids: Explicit case ids or paths; when given, ``suite`` is ignored.
        limit: Keep at most this many (after filtering).
        real_toolkits: Toolkits the run forces onto the sandbox (they make a case ``real``).

    Raises:
        ConfigError: the selection is empty (a filter that selects nothing is a mistake, not a run).
    """
    if ids:
        cases = [load_case(i) for i in ids]
    elif suite in SUITE_KINDS:
        cases = builtin_cases()
        if suite != "builtin":
            cases = [c for c in cases if needs_sandbox(c, real_toolkits) == (suite == "real")]
    else:
        cases = load_cases(Path(suite))
    if limit is not None:
        cases = cases[:limit]
    if not cases:
        raise ConfigError(f"--suite {suite!r} selects no case; use {', '.join(SUITE_KINDS)} or a folder of cases")
    return cases
