"""Counts the hostile-input suite by expected outcome and prints the tally after a run.

An input's outcome is the prefix of its parametrised id (``clear-error:...``) or its ``hostile`` marker.
"""

from __future__ import annotations

from collections import Counter

import pytest

_OUTCOMES: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hostile(outcome): the expected outcome of a hostile input")


def _outcome(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("hostile")
    if marker is not None:
        return str(marker.args[0])
    callspec = getattr(item, "callspec", None)
    if callspec is not None and ":" in callspec.id:
        return str(callspec.id.split(":", 1)[0])
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        outcome = _outcome(item)
        if outcome is not None:
            _OUTCOMES[item.nodeid] = outcome


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _OUTCOMES:
        return
    tally: Counter[tuple[str, str]] = Counter()
    for status in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(status, []):
            nodeid = getattr(report, "nodeid", None)
            if nodeid in _OUTCOMES and getattr(report, "when", "call") in ("call", "setup"):
                if status == "passed" and report.when != "call":
                    continue
                tally[(_OUTCOMES[nodeid], status)] += 1
    if not tally:
        return
    terminalreporter.section("hostile inputs by expected outcome")
    for outcome in sorted({o for o, _ in tally}):
        counts = ", ".join(f"{n} {s}" for (o, s), n in sorted(tally.items()) if o == outcome)
        terminalreporter.write_line(f"{outcome:24} {counts}")
    terminalreporter.write_line(f"{'total':24} {sum(tally.values())} inputs")
