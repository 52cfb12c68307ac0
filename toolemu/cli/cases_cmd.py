"""``toolemu cases``: list built-in cases, import ToolEmu and OpenAgentSafety cases, validate, schemas."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from toolemu.cli.coverage_cmd import similar_cmd, stats_cmd
from toolemu.cli.replay_cmd import import_openhands_command
from toolemu.cli.terminal import echo
from toolemu.core.errors import HOSTILE_INPUT_FAULTS, CaseError, ConfigError, Error
from toolemu.core.outfiles import write_replace
from toolemu.core.toolkit_check import check_toolkit
from toolemu.core.types import ToolkitSpec
from toolemu.testcases import (
    Case,
    ImportReport,
    builtin_case_ids,
    builtin_cases,
    case_files,
    check_case,
    import_cases,
    load_case_file,
)
from toolemu.testcases.loader import builtin_data_dir, find_builtin_case
from toolemu.testcases.relation import relation_problems
from toolemu.testcases.schema import PythonCheck
from toolemu.toolkits import REAL_TOOLKITS, builtin_toolkit_specs, find_specs_near

F = TypeVar("F", bound=Callable[..., Any])


def _out_folder(text: str) -> Callable[[F], F]:
    """The importers' ``--out`` folder option."""
    return click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path), help=text)


@click.group("cases")
def cases() -> None:
    """Safety test cases: list, import, validate, schema."""


@cases.command("list")
def list_cmd() -> None:
    """List the built-in cases: id, risk category, intent, toolkits and title."""
    for case in builtin_cases():
        category = case.risk_category.value if case.risk_category else "-"
        intent = case.intent.value if case.intent else "-"
        echo(f"{case.id:38} {category:30} {intent:26} {','.join(case.toolkits):28} {case.title}")
    echo(f"{len(builtin_case_ids())} cases")


@cases.command("import-toolemu")
@click.argument("cases_json", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--toolkits",
    "toolkits_json",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="ToolEmu toolkit specs JSON (e.g. all_toolkits.json).",
)
@_out_folder("Folder to write <id>.yaml files and toolkits/<Name>.json into.")
def import_toolemu_cmd(cases_json: Path, toolkits_json: Path, out_dir: Path) -> None:
    """Convert ToolEmu CASES_JSON (and its toolkits) into case files."""
    _show(import_cases("toolemu", cases_json, out_dir, toolkits=toolkits_json))


@cases.command("import-oas")
@click.argument("tasks_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_out_folder("Folder to write <id>/case.yaml folders into.")
@click.option("--strict", is_flag=True, help="Exit 1 when any task folder is malformed (good ones are still imported).")
def import_oas_cmd(tasks_dir: Path, out_dir: Path, strict: bool) -> None:
    """Convert OpenAgentSafety task folders under TASKS_DIR into case folders.

    Every good task is imported; each malformed one is reported with its reason and does not stop the rest.
    """
    report = import_cases("oas", tasks_dir, out_dir, strict=False)
    _show(report)
    if strict and report.failed:
        raise SystemExit(1)


def _show(report: ImportReport) -> None:
    """Prints what an importer did: a line per case, toolkit, skip and failure, the counts, then its findings."""
    for name, path in report.imported:
        echo(f"imported {name:34} {path}")
    for name, path in report.toolkits:
        echo(f"toolkit  {name:34} {path}")
    for name, reason in report.skipped:
        echo(f"skipped  {name:34} {reason}")
    for name, reason in report.failed:
        echo(f"failed   {name:34} {reason}")
    toolkits = f", {len(report.toolkits)} toolkits" if report.toolkits else ""
    echo(f"{len(report.imported)} imported, {len(report.skipped)} skipped, {len(report.failed)} failed{toolkits}")
    for _name, line in report.findings:
        echo(f"warning  {line}")


def _validate_file(file: Path, seen: dict[str, Path], strict: bool) -> tuple[list[str], list[Case]]:
    """Returns one output line per case in ``file`` ("OK id" or "FAIL ...") and the cases that passed."""
    try:
        loaded = load_case_file(file)
    except Error as e:
        return [f"FAIL {e}"], []
    except HOSTILE_INPUT_FAULTS as e:  # one file's fault never stops the validation of the others
        return [f"FAIL {file}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"], []
    lines: list[str] = []
    good: list[Case] = []
    for case in loaded:
        try:
            if case.id in seen:
                raise CaseError(f"{file}: duplicate case id `{case.id}` (also in {seen[case.id]})")
            seen[case.id] = file
            specs: dict[str, ToolkitSpec] = {
                **builtin_toolkit_specs(),
                **find_specs_near(case.source_dir or "."),
            }
            for name in case.toolkits:
                if name in specs:
                    check_toolkit(specs[name])
            check_case(case, specs, known_toolkits=set(REAL_TOOLKITS), require_reference_runs=strict)
        except Error as e:
            lines.append(f"FAIL {e}")
        else:
            lines.append(f"OK   {case.id}")
            good.append(case)
    return lines, good


def _replay_line(case: Case, strict: bool) -> tuple[str, int, int, int]:
    """Replays the case's reference and probe runs: its output line, runs replayed, runs classified as
    labelled, runs the rules left undecided (judged checks). ``strict`` also fails a check no unsafe run fires."""
    from toolemu.bench.reference import dead_checks, replay_reference_runs

    where = case.source_file or case.source_dir or "-"
    total = len(case.reference_runs) + len(case.probe_runs)
    try:
        verdicts = replay_reference_runs(case)
    except Error as e:
        return f"FAIL {where}: case `{case.id}`: reference_runs: cannot replay: {e}", total, 0, 0
    bad = [v for v in verdicts if not v.ok]
    undecided = sum(v.undecided for v in verdicts)
    classified = len(verdicts) - len(bad) - undecided
    if bad:
        v = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        field = "probe_runs" if v.probe else "reference_runs"
        line = f"FAIL {where}: case `{case.id}`: {field}[{v.run}] ({v.label}): {v.problem}{more}"
        return line, len(verdicts), classified, undecided
    dead = dead_checks(case, verdicts) if strict else []
    if dead:
        return (f"FAIL {where}: case `{case.id}`: checks: {', '.join(f'`{d}`' for d in dead)} fire on no unsafe run; "
                "add an unsafe run it catches or remove the check", len(verdicts), classified, undecided)
    left = f", {undecided} left to the judge" if undecided else ""
    return f"OK   {case.id} ({classified} runs classified{left})", len(verdicts), classified, undecided


def _lint_notes(case: Case) -> list[str]:
    """``NOTE`` lines for the case's OAS evaluators: why one cannot fire, which inputs the folder lacks."""
    from toolemu.testcases.oas_lint import lint_folder

    if case.source_dir is None:
        return []
    notes = []
    for check in case.checks:
        if isinstance(check, PythonCheck) and check.api == "oas" and ".." not in Path(check.path).parts:
            for finding in lint_folder(Path(case.source_dir), case.instruction, evaluator=check.path):
                notes.append(f"NOTE {case.id}: {finding.file}: {finding.kind}: {finding.message}")
    return notes


@cases.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--strict", is_flag=True,
    help="Also require the built-in rules: a safe and an unsafe reference run (a benign twin: a safe, helpful one), "
         "no regex over free text, two safe and two unsafe probe runs per seed, every check fired by an unsafe run."
)
@click.option("--no-replay", is_flag=True,
              help="Skip replaying the reference runs (the checks of each case file still run).")
def validate_cmd(paths: tuple[Path, ...], strict: bool, no_replay: bool) -> None:
    """Load and check the cases in PATHS (files or folders; default: the built-in suite), then replay every
    reference and probe run and require the rule checks to classify it as labelled; print OK or the error per
    case. Runs the rules leave to the judge (judged checks) are counted apart.

    Real toolkits run in the sandbox; emulated tools answer with the smallest valid reply and NPCs with a fixed
    one (no language model). Variants and twins must name a seed validated with them or a built-in one.
    NOTE lines list OAS evaluators that cannot fire (no checkpoint, constant results, a `List[str]` signature)
    and inputs an imported task names but does not ship; they are not failures.
    """
    files = [f for path in (paths or (builtin_data_dir(),))
             for f in (case_files(path) if path.is_dir() else [path])]
    seen: dict[str, Path] = {}
    lines: list[str] = []
    good: list[Case] = []
    for file in files:
        file_lines, file_cases = _validate_file(file, seen, strict)
        lines += file_lines
        good += file_cases
    problems = relation_problems(good, find_builtin_case)
    lines += [f"FAIL {p}" for p in problems]
    linked_bad = {p.split("case `", 1)[1].split("`", 1)[0] for p in problems}
    runs = classified = undecided = 0
    if not no_replay:
        for case in good:
            if case.id in linked_bad or not case.all_runs:
                continue
            line, n, ok, left = _replay_line(case, strict)
            runs, classified, undecided = runs + n, classified + ok, undecided + left
            lines[lines.index(f"OK   {case.id}")] = line
    notes = [note for case in good for note in _lint_notes(case)]
    for line in lines:
        echo(line)
    for note in notes:
        echo(note)
    defective = _defect_lines(good)
    for line in defective:
        echo(line)
    failed = sum(line.startswith("FAIL") for line in lines)
    if defective:
        cases_hit = len({line.split()[1] for line in defective})
        echo(f"{cases_hit} cases have a defective upstream evaluator (it cannot tell safe from unsafe); they run, but "
             "coverage figures leave them out")
    if runs:
        judge = f"; {undecided} left to the judge (judged checks)" if undecided else ""
        echo(f"runs: {classified} of {runs} classified as labelled ({100 * classified / runs:.1f}%){judge}")
    echo(f"{len(lines) - failed} ok, {failed} failed")
    if failed or not lines:
        raise SystemExit(1)


def _defect_lines(good: list[Case]) -> list[str]:
    """One ``WARN`` line per upstream defect of an imported OAS evaluator (``oas_defects``)."""
    from toolemu.testcases.oas import EVALUATOR_CHECK_ID
    from toolemu.testcases.oas_defects import evaluator_defects

    out = []
    for case in good:
        if case.source_dir and any(getattr(c, "id", None) == EVALUATOR_CHECK_ID for c in case.checks):
            out += [f"WARN {case.id}: upstream evaluator defect ({d.kind}): {d.message}"
                    for d in evaluator_defects(Path(case.source_dir))]
    return out


@cases.command("schema")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), help="Write to FILE.")
@click.option("--toolkit", is_flag=True, help="The ToolkitSpec schema instead of the Case schema.")
def schema_cmd(out_file: Path | None, toolkit: bool) -> None:
    """Print the JSON Schema of a case file (or, with --toolkit, of a toolkit spec)."""
    model = ToolkitSpec if toolkit else Case
    text = json.dumps(model.model_json_schema(), indent=2) + "\n"
    if out_file is None:
        echo(text, nl=False)
        return
    if out_file.is_file() and not _is_schema_file(out_file):
        raise ConfigError(f"--out {out_file}: exists and is not a JSON schema; refusing to overwrite it")
    write_replace(out_file, text)
    echo(f"wrote {out_file}")


def _is_schema_file(path: Path) -> bool:
    """Whether ``path`` holds a JSON schema (an earlier ``cases schema --out``), which may be replaced."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "properties" in data and "title" in data


# Sub-commands that live in their own modules.
cases.add_command(stats_cmd)
cases.add_command(similar_cmd)
cases.add_command(import_openhands_command)
