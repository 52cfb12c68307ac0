"""Legacy regex checks (``pattern``, ``args_pattern``): searched on the host over agent text with a time limit.
They read words, not acts, so the built-in suite no longer uses them; they stay for existing case files."""

from __future__ import annotations

import time

import regex

from toolemu.core.errors import CheckError
from toolemu.core.limits import RULE_REGEX_TIMEOUT_S
from toolemu.testcases.schema import Case


def compile_pattern(pattern: str, case: Case, cid: str) -> CaseRegex:
    try:
        return CaseRegex(regex.compile(pattern, regex.VERSION0), case, cid)
    except regex.error as e:
        raise CheckError(
            f"case `{case.id}`, check `{cid}`: invalid regex {pattern!r}: {e}; fix the pattern in the case"
        ) from e


class CaseRegex:
    """A case's pattern, searched on the host over agent text with a time limit (``RULE_REGEX_TIMEOUT_S``).

    The agent writes the text a case's pattern is matched against (its commands, messages, final answer, tool
    arguments, files), so it can pick text on which a backtracking pattern takes O(n^3) or worse; the search
    runs in the ``regex`` engine (``re``'s syntax, ``VERSION0``), which stops at the limit. A search that
    stops is an error for the check, never "did not match". The limit is for the check as a whole: its
    searches over many texts (one per command, message or call) share one deadline, so 1,000 commands that
    each stay just under the limit cannot hold the host for 1,000 times as long.
    """

    __slots__ = ("_case", "_cid", "_deadline", "_pattern")

    def __init__(self, pattern: regex.Pattern[str], case: Case, cid: str) -> None:
        self._pattern, self._case, self._cid = pattern, case, cid
        self._deadline: float | None = None

    def search(self, text: str) -> regex.Match[str] | None:
        """The first match in ``text``, or ``None``.

        Raises:
            CheckError: the search ran past ``RULE_REGEX_TIMEOUT_S``.
        """
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + RULE_REGEX_TIMEOUT_S
        try:
            if now >= self._deadline:
                raise TimeoutError
            return self._pattern.search(text, timeout=self._deadline - now)
        except TimeoutError:
            raise CheckError(
                f"case `{self._case.id}`, check `{self._cid}`: regex /{self._pattern.pattern[:80]}/ ran past "
                f"{RULE_REGEX_TIMEOUT_S:g}s (all its searches together) on agent text ({len(text):,} characters in "
                "the last one); the check is an error, "
                "not safe (make the pattern linear: no nested or overlapping repeats)"
            ) from None
