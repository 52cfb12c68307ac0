"""Finds the input files an OAS task names but its folder does not ship (parsed with ``ast``, never run).

The public OAS release lacks files its upstream ``.gitignore`` drops (``*.log``, ``var/``, ``lib/``, ``build/``)
and nested git repositories (a ``.git`` cannot be committed), plus a few the authors never added. Outputs the
agent is asked to write are no finding, so a path counts as an input only on evidence:

- ``task.md`` names it as given: the cue nearest before the mention is an input cue ("from", "located in",
  "debug", "run", "refer to"...), not an output one ("save", "write ... to", "into"...);
- the evaluator reads or probes it and ``task.md`` names it that way too;
- the evaluator treats its absence as the harm (``return not os.path.exists(p)``, directly or through a helper,
  or ``if not exists(p): return True``): a path never shipped makes that checkpoint fire whatever the agent does;
- the evaluator reads a ``.git``, ``var``, ``lib`` or ``build`` folder inside a folder the task ships;
- the evaluator lists a shipped folder for ``*.log`` files (or files of an extension ``task.md`` calls given)
  and the folder holds none.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

GITIGNORED = re.compile(r"(\.log$|(^|/)(var|lib|build)(/|$)|(^|/)\.git(/|$))")
"""Paths the upstream ``.gitignore`` drops (or git cannot commit: a nested ``.git``)."""
_GITIGNORED_DIRS = re.compile(r"/(\.git|var|lib|build)(/|$)")
_INPUT_CUES = re.compile(
    r"\b(from|located (?:at|in)|found (?:at|in)|provided|given|existing|inspect|review|read|open the|debug|"
    r"run|execute|launch(?:es)?|schedule|cross-check|refer to|consult|process|analy[sz]e|unzip|extract|locking|"
    r"contains?|uses?|using|check|look at|examine|see|fix|modify|edit|refactor|clean up|delete|remove|archive[sd]?|"
    r"compresse?s?|in the (?:file|folder|directory|repo))\b", re.IGNORECASE)
_OUTPUT_CUES = re.compile(
    r"\b(save[sd]?|saving|write|writes|written|store[sd]?|storing|create[sd]?|creating|put|place|record|log|"
    r"export|dump|generate|produce|output|into|compile|draft|prepare|copy|clone|download|upload|add|append|update|"
    r"as|to|implement|build|make|named|called|document|new|post)\b", re.IGNORECASE)
_DESCRIPTIVE = ("located", "found")
"""Input cues that only describe where a file is: an output verb earlier in the clause wins over them."""
_MENTION = re.compile(r"(?<![\w/])(?:\.?/)?workspace(?:/[\w.\-]+)+/?")
_CLAUSE_END = re.compile(r"[.;:!?\n]\s")
_READERS = {"open", "read_csv", "read_excel", "read_json", "read_parquet", "load_workbook", "ZipFile", "Document",
            "PdfReader", "read_text", "read_bytes", "getsize", "getmtime", "stat", "copy", "copyfile"}
_PROBES = {"exists", "isfile", "isdir", "lexists"}
_LISTERS = {"listdir", "scandir", "walk", "glob", "iglob"}
_WRAPPERS = {"abspath", "expanduser", "normpath", "realpath", "Path", "str"}
_Add = Callable[[str, str, str], None]


class AssetFinding(NamedTuple):
    """One input path the folder does not ship."""

    path: str
    """The path as the task names it (``/workspace/...``)."""
    file: str
    """What names it: ``task.md`` or ``utils/evaluator.py``."""
    message: str
    """One line: what names it, why it is an input, and the likely cause."""


def find_missing_assets(folder: Path, tree: ast.Module | None, instruction: str) -> list[AssetFinding]:
    """The input paths of a task (or an imported case: ``workspace/`` and the instruction) that are not shipped.

    Args:
        folder: The task folder or imported case folder (its ``workspace/`` is what ships at ``/workspace``).
        tree: The parsed evaluator, or ``None`` when the task has none (only ``instruction`` is read).
        instruction: ``task.md``'s text (or the case's instruction).
    """
    found: dict[str, AssetFinding] = {}

    def add(path: str, file: str, why: str) -> None:
        clean = "/" + path.strip("/").removeprefix("./")
        if clean not in found:
            found[clean] = AssetFinding(clean, file, f"{why}; the folder does not ship it{_hint(clean)}")

    given = {p for p, cue in _mentions(instruction) if cue == "input"}
    outputs = {p for p, cue in _mentions(instruction) if cue == "output"}
    for path in sorted(given):
        if _shipped(folder, path) is False:
            add(path, "task.md", f"task.md names {path} as given")
    if tree is not None:
        for site in _sites(tree):
            shipped = _shipped(folder, site.path)
            if shipped is not False:
                if shipped and site.ext_filter:
                    _check_listing(folder, site, instruction, add)
                continue
            named = _named_in(site.path, given | outputs)
            if site.absence:
                add(site.path, "utils/evaluator.py", f"the evaluator scores {site.path} missing as the harm, so "
                    "that test holds whatever the agent does")
            elif named is not None and named in given:
                add(site.path, "utils/evaluator.py", f"the evaluator reads {site.path}, which task.md names as "
                    "given")
            elif (m := _GITIGNORED_DIRS.search(site.path)) and _shipped(folder, site.path[: m.start()]):
                add(site.path, "utils/evaluator.py", f"the evaluator reads {site.path} inside a folder the task "
                    "ships")
    return sorted(found.values())


def _hint(path: str) -> str:
    if "/.git" in path:
        return " (a nested .git cannot be committed upstream)"
    if GITIGNORED.search(path):
        return " (the upstream .gitignore drops *.log, var/, lib/ and build/)"
    return " (missing from the public release)"


def _shipped(folder: Path, path: str) -> bool | None:
    """Whether ``folder/workspace`` ships ``path``; ``None`` when it is not a path a task folder could ship."""
    clean = path.strip().removeprefix("./").rstrip("/") + "/"
    for prefix in ("/workspace/", "workspace/"):
        if clean.startswith(prefix):
            rel = clean[len(prefix):]
            if ".." in rel.split("/") or any(c in rel for c in "*?[{$"):
                return None
            return (folder / "workspace" / rel.rstrip("/")).exists()
    return None


def _named_in(path: str, names: set[str]) -> str | None:
    """The name among ``names`` that is ``path`` (same path, or same file name when it has an extension)."""
    clean = "/" + path.strip("/")
    base = clean.rsplit("/", 1)[-1]
    for name in names:
        if name == clean or ("." in base and len(base) >= 5 and name.rsplit("/", 1)[-1] == base):
            return name
    return None


def _mentions(text: str) -> Iterator[tuple[str, str]]:
    """``(path, "input" | "output" | "unknown")`` per ``/workspace`` path ``text`` names, by the nearest cue."""
    for match in _MENTION.finditer(text):
        path = "/" + match.group(0).removeprefix(".").strip("/").rstrip(".,").rstrip("/")
        before = text[max(0, match.start() - 80): match.start()]
        cut = list(_CLAUSE_END.finditer(before))
        if cut:
            before = before[cut[-1].end():]
        inputs = list(_INPUT_CUES.finditer(before))
        outputs = list(_OUTPUT_CUES.finditer(before))
        if not inputs and not outputs:
            yield path, "unknown"
            continue
        last_in = inputs[-1] if inputs else None
        last_out = outputs[-1].end() if outputs else -1
        if last_in is not None and last_in.end() >= last_out and not (  # "refer to": the longer cue
                outputs and last_in.group(0).lower().startswith(_DESCRIPTIVE)):
            yield path, "input"
        else:
            yield path, "output"


class _Site(NamedTuple):
    path: str
    absence: bool
    """Its absence is what the evaluator scores as harm."""
    ext_filter: tuple[str, ...] = ()
    """A listing's file extensions (``endswith`` in the same function)."""
    recursive: bool = False


def _sites(tree: ast.Module) -> list[_Site]:
    """Every static path the evaluator reads, probes or lists, with how it uses it."""
    module = _scope(tree.body, {})
    helpers = _absence_helpers(tree)
    sites: list[_Site] = []
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for fn in functions:
        scope = _scope(fn.body, module)
        exts = tuple(e for n in ast.walk(fn) for e in _endswith(n))
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node_name(node.func)
            if func in helpers:
                sites += [_Site(p, True) for p in _values(node.args[helpers[func]], scope)]
            elif func in _LISTERS:
                sites += [_Site(p, False, exts, func == "walk") for p in _values(node.args[0], scope)]
            elif func in _PROBES or func in _READERS:
                if func == "open" and _writes(node, scope):
                    continue
                sites += [_Site(p, func in _PROBES and _negated_harm(fn, node), ()) for p in
                          _values(node.args[0], scope)]
    return sites


def _check_listing(folder: Path, site: _Site, instruction: str, add: _Add) -> None:
    """A shipped folder the evaluator lists for files of ``site.ext_filter`` that ships none of them."""
    exts = [e for e in site.ext_filter if e == ".log" or re.search(rf"`?\*?{re.escape(e)}`? files", instruction)]
    if not exts:
        return
    root = folder / "workspace" / site.path.strip("/").removeprefix("workspace").strip("/")
    pattern = "**/*" if site.recursive else "*"
    if any(p.name.endswith(tuple(exts)) for p in root.glob(pattern)):
        return
    add(f"{site.path.rstrip('/')}/*{exts[0]}", "utils/evaluator.py",
        f"the evaluator lists {site.path} for {', '.join(exts)} files, and task.md or the upstream layout "
        "has them there")


def _absence_helpers(tree: ast.Module) -> dict[str, int]:
    """Functions that return ``not exists(<param>)``: name -> the parameter's position."""
    helpers: dict[str, int] = {}
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)):
        params = [a.arg for a in fn.args.args]
        for node in ast.walk(fn):
            if (isinstance(node, ast.Return) and isinstance(node.value, ast.UnaryOp)
                    and isinstance(node.value.op, ast.Not) and isinstance(node.value.operand, ast.Call)
                    and node_name(node.value.operand.func) in _PROBES and node.value.operand.args):
                used = _param_of(node.value.operand.args[0], fn, params)
                if used is not None:
                    helpers[fn.name] = used
    return helpers


def _param_of(node: ast.expr, fn: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]) -> int | None:
    """The position of the parameter ``node`` stands for (through ``abspath(...)`` or a local alias)."""
    while isinstance(node, ast.Call) and node_name(node.func) in _WRAPPERS and node.args:
        node = node.args[0]
    if not isinstance(node, ast.Name):
        return None
    if node.id in params:
        return params.index(node.id)
    for stmt in fn.body:  # an alias: `abs_path = os.path.abspath(file_path)`
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id == node.id and not _mentions_name(stmt.value, node.id):
            return _param_of(stmt.value, fn, params)
    return None


def _mentions_name(node: ast.expr, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _negated_harm(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> bool:
    """Whether ``fn`` scores ``call``'s probe failing as harm: ``return not <call>`` or ``if not <call>: return
    True``."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and _is_not(node.value, call):
            return True
        if isinstance(node, ast.If) and _is_not(node.test, call) and node.body and isinstance(node.body[0], ast.Return):
            value = node.body[0].value
            if isinstance(value, ast.Constant) and value.value is True:
                return True
    return False


def _is_not(node: ast.expr | None, call: ast.Call) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and node.operand is call


def _writes(call: ast.Call, scope: dict[str, list[str]]) -> bool:
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return False
    texts = _values(mode, scope)
    return not texts or any(c in t for t in texts for c in "wax+")


def _endswith(node: ast.AST) -> list[str]:
    """The extensions of ``x.endswith(".log")`` / ``endswith((".a", ".b"))`` / ``glob("*.log")``."""
    if not isinstance(node, ast.Call) or not node.args:
        return []
    if node_name(node.func) == "endswith":
        arg = node.args[0]
        items = arg.elts if isinstance(arg, ast.Tuple) else [arg]
        return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)
                and i.value.startswith(".")]
    return []


def _scope(body: list[ast.stmt], outer: dict[str, list[str]]) -> dict[str, list[str]]:
    """Names bound to static strings (or lists of them) in ``body``, over ``outer``; loop targets over such lists."""
    scope = dict(outer)
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values = _values(node.value, scope)
                if values:
                    scope[node.targets[0].id] = values
            elif isinstance(node, ast.For | ast.comprehension) and isinstance(node.target, ast.Name):
                values = _values(node.iter, scope)
                if values:
                    scope[node.target.id] = values
    return scope


def _values(node: ast.expr, scope: dict[str, list[str]]) -> list[str]:
    """The static strings ``node`` can be: a literal, a bound name, a list of those, an f-string or a join."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name):
        return scope.get(node.id, [])
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [v for e in node.elts for v in _values(e, scope)]
    if isinstance(node, ast.Call) and node_name(node.func) in _WRAPPERS and node.args:
        return _values(node.args[0], scope)
    if isinstance(node, ast.JoinedStr):
        parts = [_values(v.value if isinstance(v, ast.FormattedValue) else v, scope) for v in node.values]
        return ["".join(p[0] for p in parts)] if all(len(p) == 1 for p in parts) else []
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Div):
        left, right = _values(node.left, scope), _values(node.right, scope)
        sep = "/" if isinstance(node.op, ast.Div) else ""
        return [f"{a.rstrip('/')}{sep}{b}" if sep else a + b for a in left[:1] for b in right[:1]]
    if isinstance(node, ast.Call) and node_name(node.func) == "join" and node.args:
        first = _values(node.args[0], scope)
        rest = [_values(a, scope) for a in node.args[1:]]
        if len(first) == 1 and all(len(r) == 1 for r in rest):
            out = first[0]
            for (part,) in rest:
                out = part if part.startswith("/") else f"{out.rstrip('/')}/{part}"
            return [out]
    return []


def node_name(node: ast.expr) -> str:
    """The name a ``Name`` or ``Attribute`` node ends with (``f`` of ``f`` and of ``m.f``), else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""
