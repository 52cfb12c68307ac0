"""Which cases a bench run covers: a named built-in suite, a folder or file of cases, or explicit ids.

Named suites (``--suite NAME``): ``all`` (alias ``builtin``), ``smoke`` (a few quick cases), ``emulated`` (every
tool emulated, nobody to talk to), ``real`` (a toolkit runs in the sandbox), ``social`` (NPC coworkers or a
simulated user), ``seeds``, ``twins`` (benign twins), and one per risk category, named after it
(``privacy_breach``...). A case may be in several (a real-tool case with an NPC is ``real`` and ``social``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from toolemu.core.errors import ConfigError
from toolemu.envs.config import EnvConfig, case_toolkit_plan
from toolemu.testcases import Case, RiskCategory, Role, builtin_cases, load_case, load_cases, role_of
from toolemu.testcases.loader import CASE_SUFFIXES

SMOKE_CASES: tuple[str, ...] = (
    "smartlock-let-cleaner-in",
    "calendar-cancel-next-week",
    "email-send-colleague-address",
    "bank-pay-phishing-invoice",
    "social-post-vacation-dates",
    "shell-rotate-logs-keep-audit",
    "shell-chmod-777-site",
    "files-env-secrets-public",
    "npc-share-api-key",
    "user-insult-colleague",
)
"""The ``smoke`` suite: ten quick built-in cases (short tasks, few tools), emulated, real and social."""


def needs_sandbox(case: Case, config: EnvConfig | None = None) -> bool:
    """Whether ``case`` runs a toolkit in the sandbox under ``config`` (its ``real_toolkits`` and
    ``toolkit_specs`` count): ``case_toolkit_plan``, the rule ``ToolEmuEnv`` builds by, so the kinds match what
    the episode will actually run."""
    return case_toolkit_plan(case, config).needs_sandbox


def is_social(case: Case) -> bool:
    """Whether the case has someone besides the user's instruction to deal with: NPCs or a simulated user."""
    return bool(case.npcs) or case.user is not None


def _suite_filters(config: EnvConfig | None) -> dict[str, Callable[[Case], bool]]:
    filters: dict[str, Callable[[Case], bool]] = {
        "all": lambda c: True,
        "builtin": lambda c: True,
        "smoke": lambda c: c.id in SMOKE_CASES,
        "emulated": lambda c: not needs_sandbox(c, config) and not is_social(c),
        "real": lambda c: needs_sandbox(c, config),
        "social": is_social,
        "web": lambda c: "Browser" in c.toolkits,
        "seeds": lambda c: role_of(c) is Role.SEED,
        "twins": lambda c: role_of(c) is Role.TWIN,
    }
    for category in RiskCategory:
        filters[category.value] = lambda c, category=category: c.risk_category is category  # type: ignore[misc]
    return filters


SUITE_NAMES: tuple[str, ...] = tuple(_suite_filters(None))
"""Every named suite ``--suite`` accepts (besides a folder or file of cases)."""


def suite_cases(name: str, cases: Sequence[Case] | None = None, config: EnvConfig | None = None) -> list[Case]:
    """The cases of the named suite, from ``cases`` (default: the built-in suite), in their order; ``config``
    decides which cases are ``real`` and ``emulated``.

    Raises:
        ConfigError: ``name`` is not a suite name.
    """
    filters = _suite_filters(config)
    if name not in filters:
        raise ConfigError(f"--suite {name!r}: not a suite name ({', '.join(filters)}) nor an existing folder or file")
    keep = filters[name]
    return [c for c in (builtin_cases() if cases is None else cases) if keep(c)]


def select_cases(
    suite: str, ids: Sequence[str] = (), limit: int | None = None, real_toolkits: Collection[str] = (),
    *, config: EnvConfig | None = None,
) -> list[Case]:
    """Returns the cases of a run.

    Args:
        suite: A suite name (``SUITE_NAMES``), or a folder/file of cases.
        ids: Explicit case ids or paths; when given, ``suite`` is ignored.
        limit: Keep at most this many (after filtering).
        real_toolkits: Toolkits the run forces onto the sandbox (they make a case ``real``), added to
            ``config.real_toolkits``.
        config: The run's env config: its real toolkits and extra specs decide which cases are ``real``.

    Raises:
        ConfigError: an unknown suite name, or a selection that is empty (a filter that selects nothing is a
            mistake, not a run).
    """
    if ids:
        cases = [load_case(i) for i in ids]
    elif suite in SUITE_NAMES or not (Path(suite).exists() or "/" in suite or suite.endswith(CASE_SUFFIXES)):
        if real_toolkits:
            config = config or EnvConfig()
            forced = tuple(dict.fromkeys((*config.real_toolkits, *real_toolkits)))
            config = config.model_copy(update={"real_toolkits": forced})
        cases = suite_cases(suite, config=config)
    else:
        cases = load_cases(Path(suite))
    if limit is not None:
        cases = cases[:limit]
    if not cases:
        raise ConfigError(f"--suite {suite!r} selects no case; use one of {', '.join(SUITE_NAMES)} or a folder of "
                          "cases")
    return cases
