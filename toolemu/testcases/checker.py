"""Conformance checks for a ``Case`` (Gymnasium's checker pattern): toolkits, criteria, regexes, files."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping
from pathlib import Path

from toolemu.core.errors import CaseError
from toolemu.core.people import CHAT_TOOLKIT
from toolemu.core.types import ToolkitSpec
from toolemu.testcases.check_types import legacy_text_fields
from toolemu.testcases.relation import Role, check_twin_runs, role_of
from toolemu.testcases.schema import Case, JudgedCheck, MessageSentCheck, PythonCheck, ToolCalledCheck


def _where(case: Case) -> str:
    origin = case.source_file or case.source_dir
    return f"case `{case.id}`" + (f" ({origin})" if origin else "")


def _check_toolkits(case: Case, known: Collection[str]) -> None:
    known = {*known, CHAT_TOOLKIT}
    if not case.toolkits:
        raise CaseError(f"{_where(case)}: toolkits: empty; name at least one toolkit")
    for i, name in enumerate(case.toolkits):
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f" Did you mean `{close[0]}`?" if close else " Add its spec JSON under a toolkits/ folder."
            raise CaseError(f"{_where(case)}: toolkits[{i}]: toolkit `{name}` is not known.{hint}")


def _check_checks(case: Case) -> None:
    """Unique check ids, patterns that compile, python check files that exist."""
    ids = [c.id for c in case.checks if c.id is not None]
    if len(ids) != len(set(ids)):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise CaseError(f"{_where(case)}: checks: duplicate check id `{dup}`")
    _check_patterns(case)
    _check_files(case)


def _check_patterns(case: Case) -> None:
    for i, check in enumerate(case.checks):
        for field, pattern in check.patterns():
            try:
                re.compile(pattern)
            except re.error as e:
                raise CaseError(
                    f"{_where(case)}: checks[{i}].{field}: {pattern!r} is not a valid regex: {e}"
                ) from None


def _check_files(case: Case) -> None:
    base = Path(case.source_dir) if case.source_dir else None
    for i, check in enumerate(case.checks):
        if isinstance(check, PythonCheck):
            if base is None:
                raise CaseError(
                    f"{_where(case)}: checks[{i}].path: a python check needs a case loaded from a file"
                )
            if not (base / check.path).is_file():
                raise CaseError(f"{_where(case)}: checks[{i}].path: {check.path!r} not found under {base}")
    seed_base = Path(case.environment.base_dir) if case.environment.base_dir else base
    for i, seed in enumerate(case.environment.files):
        if seed.content is not None and seed.source is not None:
            raise CaseError(f"{_where(case)}: environment.files[{i}]: give content or source, not both")
        if seed.source is not None and (seed_base is None or not (seed_base / seed.source).exists()):
            raise CaseError(
                f"{_where(case)}: environment.files[{i}].source: {seed.source!r} not found under {seed_base}"
            )
    named = [(f"environment.service_files[{i}].source", f.source) for i, f in enumerate(case.environment.service_files)]
    named += [(f"environment.service_setup[{i}]", script) for i, script in enumerate(case.environment.service_setup)]
    for field, source in named:
        if source is not None and (seed_base is None or not (seed_base / source).is_file()):
            raise CaseError(f"{_where(case)}: {field}: {source!r} not found under {seed_base}")


def _check_tools(case: Case, specs: Mapping[str, ToolkitSpec]) -> None:
    # Only toolkits with a spec list their tools; real toolkits named without a spec are skipped here.
    tools = {n for name in case.toolkits if name in specs for n in specs[name].tool_names()}
    if not tools:
        return
    for i, check in enumerate(case.checks):
        if isinstance(check, ToolCalledCheck) and check.tool not in tools:
            close = difflib.get_close_matches(check.tool, sorted(tools), n=1)
            hint = f" Did you mean `{close[0]}`?" if close else ""
            raise CaseError(
                f"{_where(case)}: checks[{i}].tool: `{check.tool}` is not a tool of this case.{hint}"
            )


def check_case(
    case: Case,
    toolkit_specs: Mapping[str, ToolkitSpec] | Collection[str],
    *,
    known_toolkits: Collection[str] = (),
    require_reference_runs: bool = False,
) -> None:
    """Checks that a case can run and be graded.

    Requires: every toolkit known; at least one criterion (expected achievements, checks, unsafe behaviour);
    unique check ids; compilable regexes; python check files and seed sources that exist; ``tool_called``
    checks naming a tool of the case's toolkits (when their specs are given); and, with
    ``require_reference_runs`` (built-in cases), at least one safe and one unsafe reference run.

    Args:
        case: The case.
        toolkit_specs: Toolkit specs by name (or just known names, which skips the tool-name checks).
        known_toolkits: Further resolvable toolkit names without a spec here (real, sandboxed toolkits).
        require_reference_runs: Require a safe and an unsafe reference run.

    Raises:
        CaseError: One line naming the case, the field and the problem.
    """
    _check_toolkits(case, set(toolkit_specs) | set(known_toolkits))
    _check_people(case)
    if not (case.expected_achievements or case.checks or case.unsafe_behavior.strip()):
        raise CaseError(
            f"{_where(case)}: no criteria; add expected_achievements, checks or unsafe_behavior to grade it"
        )
    _check_checks(case)
    if isinstance(toolkit_specs, Mapping):
        _check_tools(case, toolkit_specs)
    if require_reference_runs:
        labels = {run.label for run in case.reference_runs}
        check_twin_runs(case)
        needed = ("safe",) if role_of(case) is Role.TWIN else ("safe", "unsafe")
        for label in needed:
            if label not in labels:
                raise CaseError(f"{_where(case)}: reference_runs: needs at least one `{label}` run")
        for i, run in enumerate(case.reference_runs):
            if not run.actions:
                raise CaseError(f"{_where(case)}: reference_runs[{i}].actions: empty")
        check_builtin_rules(case)


MIN_PROBES_PER_LABEL = 2
"""Probe runs a seed case needs per label (``safe``, ``unsafe``) under the built-in rules."""


def check_builtin_rules(case: Case) -> None:
    """The built-in suite's rules for checks and probes (``cases validate --strict``): no regex over free text,
    judged checks with labelled examples of both answers, and a seed with at least two safe and two unsafe
    probe runs.

    Raises:
        CaseError: One line naming the case, the field and the problem.
    """
    for i, check in enumerate(case.checks):
        for name in legacy_text_fields(check):
            raise CaseError(
                f"{_where(case)}: checks[{i}].{name}: a regex over free text reads words, not acts; use an act, "
                "state or value check (tool_called `where`, command_run `program`/`flags`/`args`, file_*, "
                "value_leaked), or a `judged` check for a content harm"
            )
        if isinstance(check, JudgedCheck):
            answers = {e.answer for e in check.examples}
            if answers != {"yes", "no"}:
                raise CaseError(f"{_where(case)}: checks[{i}].examples: a judged check needs labelled examples "
                                "with both answers (at least one `yes` and one `no`)")
    for i, run in enumerate(case.probe_runs):
        if not run.actions:
            raise CaseError(f"{_where(case)}: probe_runs[{i}].actions: empty")
    if role_of(case) is Role.SEED:
        for label in ("safe", "unsafe"):
            have = sum(r.label == label for r in case.probe_runs)
            if have < MIN_PROBES_PER_LABEL:
                raise CaseError(f"{_where(case)}: probe_runs: a seed needs at least {MIN_PROBES_PER_LABEL} `{label}` "
                                f"probe runs written apart from its checks, has {have}")


# ---- checks run when an env is made (ToolEmuEnv construction) ----

def _check_people(case: Case) -> None:
    """NPCs are reachable (the ``Chat`` toolkit), uniquely named, and ``message_sent`` checks can see a message.

    A ``message_sent`` check on a case where nobody can be messaged, or naming someone who is not there, could
    never fire: it would pass every run vacuously, so it is refused.
    """
    has_chat = CHAT_TOOLKIT in case.toolkits
    if has_chat and not case.npcs:
        raise CaseError(f"{_where(case)}: toolkits: `{CHAT_TOOLKIT}` needs someone to talk to; add npcs")
    if case.npcs and not has_chat:
        raise CaseError(f"{_where(case)}: npcs: the agent reaches NPCs only through the `{CHAT_TOOLKIT}` toolkit; "
                        f"add `{CHAT_TOOLKIT}` to toolkits")
    names = [n.name.casefold() for n in case.npcs]
    if len(names) != len(set(names)):
        dup = next(n.name for n in case.npcs if names.count(n.name.casefold()) > 1)
        raise CaseError(f"{_where(case)}: npcs: two NPCs are named `{dup}`; names must differ (case-insensitively)")
    for i, check in enumerate(case.checks):
        if not isinstance(check, MessageSentCheck):
            continue
        if not case.npcs:
            raise CaseError(f"{_where(case)}: checks[{i}]: `message_sent` on a case without npcs can never fire; "
                            f"add npcs and the `{CHAT_TOOLKIT}` toolkit, or remove the check")
        if check.npc is not None and check.npc.casefold() not in names:
            people = ", ".join(n.name for n in case.npcs)
            raise CaseError(f"{_where(case)}: checks[{i}].npc: `{check.npc}` is not an NPC of this case "
                            f"(npcs: {people})")


def _check_grading(case: Case, evaluate: bool | str) -> None:
    """What the chosen evaluation reads must exist: a case without it would score without evidence.

    ``evaluate`` is an evaluate mode (``toolemu.rewards.EvaluateMode``, a ``str``) or its spelling ``True``
    (``full``) / ``False`` (``off``).
    """
    if evaluate is False or evaluate == "off":
        return
    if evaluate == "rules":
        if not case.checks:
            raise CaseError(
                f"{_where(case)}: checks: empty, and evaluate='rules' scores only rule checks; add checks or "
                "use evaluate='full' (judges)"
            )
        return
    if not (case.checks or case.unsafe_behavior.strip() or case.risky_outcomes or case.risky_actions):
        raise CaseError(
            f"{_where(case)}: no safety criteria (checks, unsafe_behavior, risky_outcomes, risky_actions are all "
            "empty); add one so the episode can be graded"
        )


def check_case_for_env(case: Case, *, evaluate: bool | str = True) -> None:
    """The checks ``ToolEmuEnv`` runs on its case before building toolkits (tool names come after).

    Requires: NPCs reachable through ``Chat`` and ``message_sent`` checks that can fire; the grading
    criteria the chosen ``evaluate`` mode reads (rule checks for ``"rules"``; a safety criterion for
    ``True``); unique check ids, compilable regexes, python check files that exist.

    Raises:
        CaseError: One line naming the case, its file, the field and the problem.
    """
    _check_people(case)
    _check_grading(case, evaluate)
    _check_checks(case)


def check_case_tools(case: Case, specs: Mapping[str, ToolkitSpec]) -> None:
    """Every ``tool_called`` check names a tool of the case's toolkits (``specs``: all of them, real ones too).

    Raises:
        CaseError: a check names a tool (or a toolkit) the case does not have, with a suggestion.
    """
    tools = {n for spec in specs.values() for n in spec.tool_names()}
    for i, check in enumerate(case.checks):
        if isinstance(check, ToolCalledCheck) and check.tool not in tools:
            close = difflib.get_close_matches(check.tool, sorted(tools), n=1)
            hint = f" Did you mean `{close[0]}`?" if close else f" Its tools: {', '.join(sorted(tools))}."
            if check.tool in specs:
                names = ", ".join(specs[check.tool].tool_names())
                hint = f" `{check.tool}` is a toolkit; name one of its tools: {names}."
            raise CaseError(f"{_where(case)}: checks[{i}].tool: `{check.tool}` is not a tool of this case.{hint}")
