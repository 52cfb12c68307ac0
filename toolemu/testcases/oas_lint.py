"""Static checks of an OAS task folder: assets it names but does not ship, and evaluators that cannot fire.

The evaluator is untrusted code, so it is only parsed (``ast``), never imported or run.

Missing assets are flagged conservatively: a path is reported only when the evaluator reads it as an input
(``open`` for reading, ``os.listdir``/``os.scandir``, ``pandas.read_*``, ``os.path.exists``/``isfile``/``isdir``)
*and* ``task.md`` names it on a line that does not ask the agent to create it. The public OAS release lacks files
its upstream ``.gitignore`` drops (``*.log``, ``var/``, ``lib/``, ``build/``, nested ``.git``); a path the agent
is asked to write is an output and never flagged.
"""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path
from typing import Literal, NamedTuple

MAX_EVALUATOR_BYTES = 1_000_000
"""An evaluator larger than this is not parsed (reported as ``unparsed``)."""
MAX_TASK_MD_BYTES = 1_000_000

FindingKind = Literal["missing-asset", "cannot-fire", "unparsed"]

_READERS = {"listdir", "scandir", "read_csv", "read_excel", "read_json", "exists", "isfile", "isdir", "walk"}
_OUTPUT_WORDS = re.compile(
    r"\b(creat\w*|writ\w*|wrote|sav\w*|generat\w*|produc\w*|output\w*|stor\w*|log(s|ged|ging)? (to|in|into)|"
    r"export\w*|dump\w*|record\w*|append\w*|put|place|leave|add|prepar\w*|into|draft\w*|compos\w*|updat\w*|"
    r"build\w*|implement\w*|mak\w*|turn\w*|convert\w*|rewrit\w*|renam\w*|mov\w*|cop\w*|summar\w*|clean\w*|post\w*)\b",
    re.IGNORECASE,
)
_GITIGNORED = re.compile(r"(\.log$|(^|/)(var|lib|build)(/|$)|(^|/)\.git(/|$))")
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
    evaluator = task / "utils" / "evaluator.py"
    if not evaluator.is_file() or evaluator.is_symlink():
        return []
    try:
        tree = _parse(evaluator)
    except (OSError, ValueError, SyntaxError, RecursionError, MemoryError) as e:
        return [Finding("unparsed", "utils/evaluator.py", f"not analysed: {type(e).__name__}: {_first_line(e)}")]
    findings = [Finding("cannot-fire", "utils/evaluator.py", m) for m in cannot_fire_reasons(tree)]
    findings += _missing_assets(task, tree)
    return findings


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


def _parse(path: Path) -> ast.Module:
    with path.open("rb") as f:
        data = f.read(MAX_EVALUATOR_BYTES + 1)
    return _parse_source(data, str(path))


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


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


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


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "..."`` (or a join of constants) assignments."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _path_value(node.value, names)
            if value is not None:
                names[node.targets[0].id] = value
    return names


def _path_value(node: ast.expr, names: dict[str, str]) -> str | None:
    """A string known statically: a literal, a known name, an f-string of those, ``os.path.join`` of those."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = [
            _path_value(v.value if isinstance(v, ast.FormattedValue) else v, names) for v in node.values
        ]
        return "".join(p for p in parts if p is not None) if all(p is not None for p in parts) else None
    if isinstance(node, ast.Call) and _name(node.func) == "join" and node.args:
        joined = [_path_value(a, names) for a in node.args]
        if all(j is not None for j in joined):
            out = ""
            for j in joined:
                assert j is not None
                out = j if j.startswith("/") or not out else f"{out.rstrip('/')}/{j}"
            return out
    return None


def _read_paths(tree: ast.Module) -> set[str]:
    """The static paths the evaluator reads: ``open(p)`` without a writing mode, and the readers above."""
    names = _string_constants(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = _name(node.func)
        if func == "open":
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None
            )
            mode_text = _path_value(mode, names) if mode is not None else "r"
            if mode_text is None or any(c in mode_text for c in "wax+"):
                continue
        elif func not in _READERS:
            continue
        path = _path_value(node.args[0], names)
        if path:
            found.add(path)
    return found


def _shipped(task: Path, path: str) -> bool | None:
    """Whether the task ships ``path``; ``None`` when the path is not one a task folder could ship."""
    clean = path.rstrip("/")
    for prefix, folder in (("/workspace/", "workspace"), ("workspace/", "workspace"), ("/utils/", "utils")):
        if clean.startswith(prefix):
            rel = clean[len(prefix):]
            if not rel or ".." in rel.split("/") or any(c in rel for c in "*?["):
                return None
            return (task / folder / rel).exists()
    return None


def _missing_assets(task: Path, tree: ast.Module) -> list[Finding]:
    try:
        with (task / "task.md").open("rb") as f:
            task_md = f.read(MAX_TASK_MD_BYTES).decode("utf-8", "replace")
    except OSError:
        task_md = ""
    findings: list[Finding] = []
    for path in sorted(_read_paths(tree)):
        if _shipped(task, path) is not False:
            continue
        lines = _naming_lines(task_md, path)
        if not lines or any(_OUTPUT_WORDS.search(line) for line in lines):
            continue  # not said to exist, or the agent is asked to make it: an output
        hint = " (matches a pattern the upstream .gitignore drops)" if _GITIGNORED.search(path) else ""
        findings.append(Finding(
            "missing-asset", "utils/evaluator.py",
            f"reads {path}, which task.md names but the folder does not ship{hint}; the upstream .gitignore "
            "(*.log, var/, lib/, build/, nested .git) may have dropped it",
        ))
    return findings


def _naming_lines(text: str, path: str) -> list[str]:
    """The lines of ``text`` naming ``path``: in full, or by its last two components."""
    parts = [p for p in path.rstrip("/").split("/") if p and p != "workspace"]
    keys = {path.rstrip("/")}
    if len(parts) >= 2:
        keys.add("/".join(parts[-2:]))
    return [line for line in text.splitlines() if any(k in line for k in keys)]
