"""Upstream defects of an OAS evaluator, found statically (``ast``; the evaluator is never imported or run).

A defective evaluator cannot tell safe from unsafe: its case still imports and runs, but ``cases validate``
reports it and coverage figures leave it out. Kinds:

- ``constant``: every checkpoint's result is a constant (module-level names resolved), or ``oas_lint`` finds a
  checkpoint that cannot fire (``cannot_fire_reasons``);
- ``no-checkpoint``: no checkpoint is ever built (judge only) or there is no ``grade_checkpoints``;
- ``no-evaluator``: the task has no ``utils/evaluator.py``;
- ``import-error``: a module-level statement names something never defined (a ``NameError`` at import);
- ``int-id``: a GitLab project id taken from an API answer (an int) is passed to ``make_gitlab_request``, whose
  upstream ``'/' in project_identifier`` raises ``TypeError`` (the check then always fails);
- ``missing-data``: a CSV read from ``utils/`` is not shipped, or a column read from it is not in its header (the
  lookup always fails);
- ``call-error``: a ``@grader`` function is called with fewer arguments than it requires, or runs a statement on
  every call that uses a name nothing defines or imports (``grader`` swallows the ``TypeError``/``NameError``: the
  checkpoint always fails).
"""

from __future__ import annotations

import ast
import builtins
import csv
import io
from pathlib import Path
from typing import Literal, NamedTuple

from toolemu.testcases.oas_assets import node_name as _name
from toolemu.testcases.oas_lint import MAX_EVALUATOR_BYTES, cannot_fire_reasons

DefectKind = Literal["constant", "no-checkpoint", "no-evaluator", "import-error", "int-id", "missing-data",
                     "call-error", "unparsed"]

SERVICE_HELPERS: dict[str, tuple[str, ...]] = {
    "gitlab": ("make_gitlab_request", "get_gitlab_project_id", "get_gitlab_merge_request_by_title",
               "get_gitlab_file_in_mr"),
    "owncloud": ("check_file_in_owncloud_directory", "get_binary_file_content_owncloud", "check_and_download_file",
                 "download_owncloud_content"),
    "plane": ("get_all_plane_projects", "get_plane_project_id", "get_plane_project_all_issues",
              "get_plane_state_id_dict", "get_plane_issue_details", "get_plane_cycle_details",
              "get_plane_issues_by_project_cycle", "get_plane_state_details", "create_plane_issue",
              "add_plane_issue_to_cycle"),
}
"""Service -> the ``common`` helpers that read it."""
_NO_CHECKPOINT = ("no Checkpoint is built", "no grade_checkpoints function")
_ALL_CONSTANT = "every Checkpoint has a constant result"


class Defect(NamedTuple):
    """One upstream defect of an evaluator."""

    kind: DefectKind
    message: str


def parse_evaluator(path: Path) -> ast.Module:
    """Parses an evaluator (bounded size).

    Raises:
        OSError, ValueError, SyntaxError, RecursionError: unreadable, too large, or not Python.
    """
    import warnings

    data = path.read_bytes()[: MAX_EVALUATOR_BYTES + 1]
    if len(data) > MAX_EVALUATOR_BYTES:
        raise ValueError(f"over {MAX_EVALUATOR_BYTES:,} bytes")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(data, filename=str(path))


def evaluator_defects(task: Path) -> list[Defect]:
    """The defects of ``task``'s ``utils/evaluator.py`` (a task or case folder); never raises on its content."""
    path = task / "utils" / "evaluator.py"
    if path.is_symlink() or not path.is_file():
        return [Defect("no-evaluator", "no utils/evaluator.py: nothing can be scored by rules")]
    try:
        tree = parse_evaluator(path)
    except (OSError, ValueError, SyntaxError, RecursionError, MemoryError) as e:
        return [Defect("unparsed", f"evaluator not analysed: {type(e).__name__}")]
    defects: list[Defect] = []
    for reason in cannot_fire_reasons(tree):
        if reason == _ALL_CONSTANT:
            continue  # decided below: constants that differ per branch (1 if harm else 0) are not constant
        if "typed List[str]" in reason:
            continue  # our runner hands such a function the trajectory as a list, so it can fire here
        kind: DefectKind = "no-checkpoint" if reason.startswith(_NO_CHECKPOINT) else "constant"
        defects.append(Defect(kind, reason))
    value = _constant_result(tree)
    if not any(d.kind == "no-checkpoint" for d in defects) and value is not None:
        defects.append(Defect("constant", f"every Checkpoint's result is the constant {value!r}"))
    defects += [Defect("import-error", m) for m in _undefined_at_import(tree)]
    defects += [Defect("int-id", m) for m in _int_ids(tree)]
    defects += [Defect("missing-data", m) for m in _missing_columns(task, tree)]
    defects += [Defect("call-error", m) for m in _call_errors(tree)]
    return defects


def services_read(task: Path) -> tuple[str, ...]:
    """The services whose ``common`` helpers the evaluator calls (sorted); empty when it has none or no file."""
    path = task / "utils" / "evaluator.py"
    if path.is_symlink() or not path.is_file():
        return ()
    try:
        tree = parse_evaluator(path)
    except (OSError, ValueError, SyntaxError, RecursionError, MemoryError):
        return ()
    called = {_name(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return tuple(sorted(s for s, helpers in SERVICE_HELPERS.items() if called & set(helpers)))


def _module_constants(tree: ast.Module) -> dict[str, object]:
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, int | float):
                out[node.targets[0].id] = node.value.value
    return out


def _constant_result(tree: ast.Module) -> object:
    """The one value every ``Checkpoint(total, result)`` gives as its result (a literal or a module-level number),
    or ``None`` when some result is computed or they differ."""
    names = _module_constants(tree)
    values: set[object] = set()
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _name(n.func) == "Checkpoint"]
    for call in calls:
        arg = call.args[1] if len(call.args) >= 2 else next((k.value for k in call.keywords if k.arg == "result"), None)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, int | float):
            values.add(arg.value)
        elif isinstance(arg, ast.Name) and arg.id in names:
            values.add(names[arg.id])
        else:
            return None
    return values.pop() if len(values) == 1 else None


def _undefined_at_import(tree: ast.Module) -> list[str]:
    """Names read by module-level statements (outside functions and classes) that nothing defines."""
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body):
        return []  # a star import may define anything
    defined = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                                     "__builtins__", "__path__", "__cached__", "__annotations__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    found = []
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in defined:
                found.append(f"line {node.lineno}: name `{node.id}` is not defined (NameError at import)")
    return found


def _int_ids(tree: ast.Module) -> list[str]:
    """Calls of ``make_gitlab_request`` whose project id is ``<x>["id"]`` (an int in GitLab's answers), directly or
    through a local name, never through ``str()``."""
    found = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        from_ids = {
            t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) and _is_id_subscript(n.value)
            for t in n.targets if isinstance(t, ast.Name)
        }
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call) and _name(n.func) == "make_gitlab_request"):
            arg = call.args[0] if call.args else next(
                (k.value for k in call.keywords if k.arg == "project_identifier"), None)
            if arg is not None and (_is_id_subscript(arg) or (isinstance(arg, ast.Name) and arg.id in from_ids)):
                found.append(f"line {call.lineno}: make_gitlab_request gets an int project id "
                             f"(`{ast.unparse(arg)}`); upstream's helper raises TypeError, so this check always fails")
    return found


def _is_id_subscript(node: ast.expr) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == "id")


def _missing_columns(task: Path, tree: ast.Module) -> list[str]:
    """``df = pd.read_csv("<shipped csv>")`` then ``df[...] == ...`` / ``row["col"]`` naming a column the CSV lacks."""
    found = []
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        header: set[str] | None = None
        csv_name = ""
        local = {t.id: n.value.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                 and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                 for t in n.targets if isinstance(t, ast.Name)}
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and _name(node.func) == "read_csv" and node.args:
                arg = node.args[0]
                name = arg.value if isinstance(arg, ast.Constant) else local.get(arg.id) if isinstance(
                    arg, ast.Name) else None
                if isinstance(name, str):
                    csv_name = name
                    header = _csv_header(task, csv_name)
                    if header is None and name.lstrip("/").startswith("utils/") and not (task / name.lstrip(
                            "/")).exists():
                        found.append(f"line {node.lineno}: reads {name}, which the task does not ship, so the "
                                     "lookup always fails")
        if not header:
            continue
        for node in ast.walk(fn):
            if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                    and isinstance(node.slice.value, str) and node.slice.value not in header
                    and not node.slice.value.startswith("/")):
                found.append(f"line {node.lineno}: column `{node.slice.value}` is not in {csv_name}'s header, so "
                             "the lookup always fails")
    return sorted(set(found))


def _csv_header(task: Path, name: str) -> set[str] | None:
    rel = name.lstrip("/")
    path = task / rel
    if not rel.startswith("utils/") or ".." in rel.split("/") or path.is_symlink() or not path.is_file():
        return None
    try:
        with path.open("rb") as f:
            first = f.read(64 * 1024).decode("utf-8-sig", "replace").splitlines()[:1]
    except OSError:
        return None
    return set(next(csv.reader(io.StringIO(first[0])), [])) if first else None


def _defined_names(tree: ast.Module) -> set[str] | None:
    """Every name the module defines, imports or binds anywhere (``None`` with a star import: anything goes)."""
    if any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree)):
        return None
    names = set(dir(builtins)) | {"__file__", "__name__"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _call_errors(tree: ast.Module) -> list[str]:
    """``@grader`` functions called with too few arguments, or reading a name nothing defines."""
    graded = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)
              and any(_name(d) == "grader" for d in n.decorator_list)}
    found = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        fn = graded.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if fn is None or any(isinstance(a, ast.Starred) for a in call.args) or call.keywords:
            continue
        params = fn.args.posonlyargs + fn.args.args
        needed = len(params) - len(fn.args.defaults)
        if len(call.args) < needed:
            found.append(f"line {call.lineno}: {fn.name}() is called with {len(call.args)} argument(s) but needs "
                         f"{needed}; grader turns the TypeError into a failed checkpoint")
    defined = _defined_names(tree)
    if defined is not None:
        for fn in graded.values():
            # Only statements every call runs: a NameError in a branch may only replace that branch's False.
            plain = [st for st in fn.body if isinstance(st, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Expr
                                                        | ast.Return)]
            for node in (n for st in plain for n in ast.walk(st)):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in defined:
                    found.append(f"line {node.lineno}: {fn.name} uses `{node.id}`, which is never defined or "
                                 "imported; grader turns the NameError into a failed checkpoint")
    return sorted(set(found))
