"""``toolemu cases``: list built-in cases, import ToolEmu and OpenAgentSafety cases, validate, schemas."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolemu.cli.main import cli
from toolemu.core.errors import CaseError, ConfigError, Error
from toolemu.core.outfiles import write_replace
from toolemu.core.toolkit_check import check_toolkit
from toolemu.core.types import ToolkitSpec
from toolemu.testcases import (
    Case,
    builtin_case_ids,
    builtin_cases,
    case_files,
    check_case,
    import_toolemu,
    load_case_file,
)
from toolemu.toolkits import REAL_TOOLKITS, builtin_toolkit_specs, find_specs_near


@cli.group("cases")
def cases() -> None:
    """Safety test cases: list, import, validate, schema."""


@cases.command("list")
def list_cmd() -> None:
    """List the built-in cases: id, risk category, intent, toolkits and title."""
    for case in builtin_cases():
        category = case.risk_category.value if case.risk_category else "-"
        intent = case.intent.value if case.intent else "-"
        click.echo(f"{case.id:38} {category:30} {intent:26} {','.join(case.toolkits):28} {case.title}")
    click.echo(f"{len(builtin_case_ids())} cases")


@cases.command("import-toolemu")
@click.argument("cases_json", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--toolkits",
    "toolkits_json",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="ToolEmu toolkit specs JSON (e.g. all_toolkits.json).",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write <id>.yaml files and toolkits/<Name>.json into.",
)
def import_toolemu_cmd(cases_json: Path, toolkits_json: Path, out_dir: Path) -> None:
    """Convert ToolEmu CASES_JSON (and its toolkits) into case files."""
    report = import_toolemu(cases_json, toolkits_json, out_dir)
    for case_id, file in report.cases:
        click.echo(f"case    {case_id:30} {file}")
    for name, file in report.toolkits:
        click.echo(f"toolkit {name:30} {file}")
    click.echo(f"wrote {len(report.cases)} cases and {len(report.toolkits)} toolkits to {out_dir}")


@cases.command("import-oas")
@click.argument("tasks_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write <id>/case.yaml folders into.",
)
@click.option("--strict", is_flag=True, help="Exit 1 when any task folder is malformed (good ones are still imported).")
def import_oas_cmd(tasks_dir: Path, out_dir: Path, strict: bool) -> None:
    """Convert OpenAgentSafety task folders under TASKS_DIR into case folders.

    Every good task is imported; each malformed one is reported with its reason and does not stop the rest.
    """
    from toolemu.testcases.oas import import_oas

    report = import_oas(tasks_dir, out_dir, strict=False)
    for case_id, path in report.imported:
        click.echo(f"imported {case_id:34} {path}")
    for task, reason in report.skipped:
        click.echo(f"skipped  {task:34} {reason}")
    for task, reason in report.failed:
        click.echo(f"failed   {task:34} {reason}")
    click.echo(f"{len(report.imported)} imported, {len(report.skipped)} skipped, {len(report.failed)} failed")
    if strict and report.failed:
        raise SystemExit(1)


def _validate_file(file: Path, seen: dict[str, Path], strict: bool) -> list[str]:
    """Returns one output line per case in ``file`` ("OK id" or "FAIL ..."); raises nothing for bad data."""
    try:
        loaded = load_case_file(file)
    except Error as e:
        return [f"FAIL {e}"]
    lines = []
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
    return lines


@cases.command("validate")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--strict", is_flag=True, help="Also require a safe and an unsafe reference run (built-in rule)."
)
def validate_cmd(path: Path, strict: bool) -> None:
    """Load and check the cases in PATH (a file or a folder); print OK or the error per case."""
    files = case_files(path) if path.is_dir() else [path]
    seen: dict[str, Path] = {}
    lines = [line for file in files for line in _validate_file(file, seen, strict)]
    for line in lines:
        click.echo(line)
    failed = sum(line.startswith("FAIL") for line in lines)
    click.echo(f"{len(lines) - failed} ok, {failed} failed")
    if failed or not lines:
        raise SystemExit(1)


@cases.command("schema")
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), help="Write to FILE.")
@click.option("--toolkit", is_flag=True, help="The ToolkitSpec schema instead of the Case schema.")
def schema_cmd(out_file: Path | None, toolkit: bool) -> None:
    """Print the JSON Schema of a case file (or, with --toolkit, of a toolkit spec)."""
    model = ToolkitSpec if toolkit else Case
    text = json.dumps(model.model_json_schema(), indent=2) + "\n"
    if out_file is None:
        click.echo(text, nl=False)
        return
    if out_file.is_file() and not _is_schema_file(out_file):
        raise ConfigError(f"--out {out_file}: exists and is not a JSON schema; refusing to overwrite it")
    write_replace(out_file, text)
    click.echo(f"wrote {out_file}")


def _is_schema_file(path: Path) -> bool:
    """Whether ``path`` holds a JSON schema (an earlier ``cases schema --out``), which may be replaced."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "properties" in data and "title" in data
