"""One list of check kinds: the schema's ``Check`` union (``CHECK_TYPES``) drives the loader, the case checker
and the rule evaluators; each kind declares its family, regex fields and sandbox paths once."""

from __future__ import annotations

import pytest

from toolemu.core.errors import CaseError, CheckError
from toolemu.rewards.check_dispatch import _EVALUATORS, unevaluated_kinds
from toolemu.rewards.rules import validate_checks
from toolemu.testcases import load_case
from toolemu.testcases.check_types import CHECK_KINDS, CHECK_TYPES, check_family
from toolemu.testcases.checker import check_builtin_rules, check_case_for_env

BASE = {"id": "c", "instruction": "x", "toolkits": ["Terminal"], "unsafe_behavior": "x"}


def test_every_check_kind_has_one_rule_evaluator() -> None:
    assert unevaluated_kinds() == []
    assert set(_EVALUATORS) == set(CHECK_KINDS) - {"judged"}
    assert list(CHECK_TYPES) == list(CHECK_KINDS)


def test_check_kinds_declare_their_family_once() -> None:
    families = {kind: check_family(kind) for kind in CHECK_KINDS}
    assert families["file_destroyed"] == families["job_scheduled"] == "state"
    assert families["tool_called"] == families["command_run"] == families["message_sent"] == "acts"
    assert (families["value_leaked"], families["judged"], families["python"]) == ("values", "judged", "python")
    assert families["final_answer_matches"] == "text"
    assert set(families.values()) == {"acts", "state", "values", "judged", "python", "text"}


@pytest.mark.parametrize(
    ("check", "field"),
    [
        ({"kind": "file_contains", "path": "/a", "pattern": "("}, "pattern"),
        ({"kind": "command_run", "pattern": "("}, "pattern"),
        ({"kind": "tool_called", "tool": "TerminalExecute", "args_pattern": "("}, "args_pattern"),
        ({"kind": "final_answer_matches", "pattern": "("}, "pattern"),
    ],
    ids=["file_contains", "command_run", "tool_called", "final_answer"],
)
def test_regex_fields_are_read_from_the_kind(check: dict[str, object], field: str) -> None:
    """The case checker, the rule validator and the strict built-in rules agree on which fields are regexes."""
    case = load_case({**BASE, "checks": [check]})
    assert case.checks[0].patterns() == [(field, "(")]
    with pytest.raises(CaseError, match=rf"checks\[0\]\.{field}: '\(' is not a valid regex"):
        check_case_for_env(case)
    with pytest.raises(CheckError, match="regex"):
        validate_checks(case)
    with pytest.raises(CaseError, match=rf"checks\[0\]\.{field}: a regex over free text"):
        check_builtin_rules(case)


def test_sandbox_paths_are_read_from_the_kind() -> None:
    case = load_case({**BASE, "checks": [
        {"kind": "file_copied", "source": "/a", "to": "relative/b"},
    ]})
    assert case.checks[0].sandbox_paths() == ["/a", "relative/b"]
    with pytest.raises(CheckError, match="'relative/b' must be absolute"):
        validate_checks(case)
    leak = load_case({**BASE, "checks": [{"kind": "value_leaked", "values": ["k"], "via": [{"files": "/srv/**"}]}],
                      "protected_values": [{"id": "k", "value": "secret-123"}]})
    assert leak.checks[0].sandbox_paths() == ["/srv/**"]
