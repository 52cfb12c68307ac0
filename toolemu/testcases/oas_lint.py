"""Static checks of an OAS task folder: assets it names but does not ship, and evaluators that cannot fire.

The evaluator is untrusted code, so it is only parsed (``ast``), never imported or run.

Missing assets (``toolemu.testcases.oas_assets``): input paths ``task.md`` or the evaluator names that the folder
does not ship (the public release lacks what the upstream ``.gitignore`` drops: ``*.log``, ``var/``, ``lib/``,
``build/``, nested ``.git``); a path the agent is asked to write is an output and never flagged.

An imported case carries the tags ``CANNOT_FIRE_TAG`` and ``MISSING_ASSET_TAG`` for its findings, so reports can
set those episodes apart (``toolemu report`` shows them as a breakdown).
"""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path
from typing import Literal, NamedTuple

from toolemu.core import safefs
from toolemu.core.errors import CaseError
from toolemu.testcases.oas_assets import find_missing_assets
from toolemu.testcases.oas_assets import node_name as _name

MAX_EVALUATOR_BYTES = 1_000_000
"""An evaluator larger than this is not parsed (reported as ``unparsed``)."""
MAX_TASK_MD_BYTES = 1_000_000

FindingKind = Literal["missing-asset", "cannot-fire", "unparsed"]

CANNOT_FIRE_TAG = "oas-cannot-fire"
"""Tag of an imported case whose evaluator cannot fire (or never varies): its rule verdict says nothing."""
MISSING_ASSET_TAG = "oas-missing-asset"
"""Tag of an imported case whose task names input files its folder does not ship."""
_CHAR_ITERATION = (
    "typed List[str]: upstream passes one string, so this check iterates characters and cannot fire as written"
)


class Finding(NamedTuple):
    """One problem found in a task folder."""

    kind: FindingKind
    file: str
    """The task-relative file the finding is about (``utils/evaluator.py`` or ``task.md``)."""
    message: str
    """One line naming the problem."""

    def line(self, task: str) -> str:
        return f"{task}: {self.file}: {self.kind}: {self.message}"


def lint_task(task: Path) -> list[Finding]:
    """Returns the findings for one OAS task folder; never raises on what the folder holds (an evaluator that
    does not parse or cannot be read is itself a finding)."""
    return lint_folder(task, _read_task_md(task))


def lint_folder(folder: Path, instruction: str, evaluator: str = "utils/evaluator.py") -> list[Finding]:
    """The findings for a task folder or an imported case folder (``workspace/``, the evaluator at
    ``evaluator``), given its instruction; never raises on what the folder holds."""
    tree: ast.Module | None = None
    findings: list[Finding] = []
    if (folder / evaluator).is_file():
        try:
            tree = _parse(folder, evaluator)
        except (OSError, ValueError, SyntaxError, RecursionError, MemoryError, CaseError) as e:
            findings.append(Finding("unparsed", evaluator, f"not analysed: {type(e).__name__}: {_first_line(e)}"))
        else:
            findings += [Finding("cannot-fire", evaluator, m) for m in cannot_fire_reasons(tree)]
    for asset in find_missing_assets(folder, tree, instruction):
        file = evaluator if asset.file == "utils/evaluator.py" else asset.file
        findings.append(Finding("missing-asset", file, asset.message))
    return findings


def lint_tags(findings: list[Finding]) -> tuple[str, ...]:
    """The case tags for ``findings`` (``CANNOT_FIRE_TAG``, ``MISSING_ASSET_TAG``)."""
    kinds = {f.kind for f in findings}
    return tuple(t for k, t in (("cannot-fire", CANNOT_FIRE_TAG), ("missing-asset", MISSING_ASSET_TAG)) if k in kinds)


def _read_task_md(task: Path) -> str:
    try:
        return safefs.read_bytes(task, "task.md", what="task file", limit=MAX_TASK_MD_BYTES).decode("utf-8", "replace")
    except (OSError, CaseError):
        return ""


def cannot_fire_reasons(tree: ast.Module) -> list[str]:
    """Why an evaluator's checkpoints can never score (or never vary): one reason per problem, or none."""
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    reasons: list[str] = []
    entry = functions.get("grade_checkpoints")
    if entry is None:
        reasons.append("no grade_checkpoints function: nothing can be scored")
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _name(n.func) == "Checkpoint"]
    if not calls:
        reasons.append("no Checkpoint is built: the result has no score")
    elif all(len(c.args) >= 2 and _constant(c.args[1]) is not None for c in calls):
        reasons.append("every Checkpoint has a constant result")
    for name, fn in sorted(functions.items()):
        if name.startswith("grade_checkpoint") and name != "grade_checkpoints":
            value = _constant_return(fn)
            if value is not None:
                reasons.append(f"{name} always returns {value!r}")
    iterating = [
        n for n, fn in sorted(functions.items()) if n.startswith("grade_checkpoint") and _iterates_list_param(fn)
    ]
    if iterating:
        reasons.append(f"{', '.join(iterating)} {_CHAR_ITERATION}")
    return reasons


def evaluator_cannot_fire(source: bytes, filename: str = "evaluator.py") -> list[str]:
    """``cannot_fire_reasons`` of an evaluator's source (parsed, never run).

    Raises:
        ValueError: The source is over ``MAX_EVALUATOR_BYTES``.
        SyntaxError: It does not parse.
    """
    return cannot_fire_reasons(_parse_source(source, filename))


def _parse(folder: Path, relpath: str) -> ast.Module:
    """Parses the evaluator, read beneath ``folder`` without following a link."""
    data = safefs.read_bytes(folder, relpath, what="evaluator", limit=MAX_EVALUATOR_BYTES)
    return _parse_source(data, str(folder / relpath))


def _parse_source(data: bytes, filename: str) -> ast.Module:
    if len(data) > MAX_EVALUATOR_BYTES:
        raise ValueError(f"over {MAX_EVALUATOR_BYTES:,} bytes")
    with warnings.catch_warnings():  # an evaluator's invalid escapes are its own business
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(data, filename=filename)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else ""


def _constant(node: ast.expr) -> object:
    """The value of ``1``, ``False``, ``int(False)``, ``int(0)``; ``None`` when not a constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bool | int | float):
        return node.value
    if isinstance(node, ast.Call) and _name(node.func) in ("int", "bool", "float") and len(node.args) == 1:
        return _constant(node.args[0])
    return None


def _constant_return(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> object:
    """The constant every ``return`` of ``fn`` gives (nested functions aside), or ``None``."""
    returns: list[ast.Return] = []
    pending: list[ast.AST] = list(fn.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return):
            returns.append(node)
        pending.extend(ast.iter_child_nodes(node))
    values = {repr(_constant(r.value)) if r.value is not None else "None" for r in returns}
    if not returns or len(values) != 1 or any(r.value is None or _constant(r.value) is None for r in returns):
        return None
    value = returns[0].value
    return _constant(value) if value is not None else None


def _iterates_list_param(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the first parameter is annotated ``List[str]``/``list`` and iterated (``for m in it``)."""
    params = fn.args.posonlyargs + fn.args.args
    if not params or params[0].annotation is None:
        return False
    annotation = ast.unparse(params[0].annotation).replace(" ", "")
    if not re.fullmatch(r"(typing\.)?(List|list)(\[str\])?", annotation):
        return False
    name = params[0].arg
    for node in ast.walk(fn):
        target = node.iter if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension) else None
        if isinstance(target, ast.Name) and target.id == name:
            return True
    return False
