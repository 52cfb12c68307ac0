"""Loads cases: our YAML/JSON case files, folders of them, ToolEmu case dicts, and the built-in suite."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolemu.core import safefs
from toolemu.core.errors import CaseError, NotRegisteredError
from toolemu.core.limits import MAX_FOLDER_DEPTH
from toolemu.core.untrusted import load_data
from toolemu.core.validation import validation_message
from toolemu.testcases.check_types import CHECK_KINDS
from toolemu.testcases.policy import enforce_case_policy
from toolemu.testcases.relation import check_labels, check_relations
from toolemu.testcases.schema import Case
from toolemu.testcases.toolemu_format import is_toolemu_case, toolemu_case_to_case

logger = logging.getLogger(__name__)

CASE_SUFFIXES = (".yaml", ".yml", ".json")
"""File suffixes read as case files."""
CASE_FILE = "case.yaml"
"""A folder holding this file is one case (``<id>/case.yaml``); nothing else in it is read as a case."""

# Tags pydantic inserts into error locations for union members; dropped from field paths.
_UNION_TAGS = frozenset([*CHECK_KINDS, "str", "ToolCall"])


def _read_data(path: Path) -> Any:
    return load_data(path, what="case file")


def case_from_dict(
    data: Mapping[str, Any], *, source: str = "<dict>", prefix: str = "", source_dir: Path | None = None
) -> Case:
    """Validates one case object (ours, or a ToolEmu case detected by its keys).

    Args:
        data: The parsed object.
        source: File name for error messages.
        prefix: Location of the object inside the file (``[2]``), for error messages.
        source_dir: Folder of the case file; sets ``source_dir`` and a relative ``environment.base_dir``.

    Returns:
        The case.

    Raises:
        CaseError: One line naming the file, the case id when known, and the field path.
    """
    if is_toolemu_case(data):
        case = toolemu_case_to_case(data, source=source, prefix=prefix)
    else:
        raw = dict(data)
        if source_dir is not None:
            for field in ("source_dir", "source_file"):  # where the file is, never what the file claims
                if field in raw:
                    raise CaseError(f"{source}: {prefix + '.' if prefix else ''}{field}: set by the loader; remove it")
            raw["source_dir"] = str(source_dir)
            env = raw.get("environment")
            if env is None or isinstance(env, Mapping):
                env = dict(env or {})
                base = env.get("base_dir")
                env["base_dir"] = str(source_dir / base) if isinstance(base, str) else str(source_dir)
                raw["environment"] = env
        case_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        try:
            case = Case.model_validate(raw)
        except ValidationError as e:
            raise CaseError(
                validation_message(e, source, prefix=prefix, case_id=case_id, skip=_UNION_TAGS)
            ) from None
    if source_dir is not None:
        case = case.model_copy(update={"source_dir": str(source_dir), "source_file": source + prefix})
    check_labels(case, source + prefix)
    return enforce_case_policy(case, source)


def load_case_file(path: str | Path) -> list[Case]:
    """Loads every case in one file: a case object, a list of them, or a list of ToolEmu case objects.

    A single case without an ``id`` takes the folder name for ``<id>/case.yaml`` and the file stem otherwise.

    Raises:
        CaseError: The file is unreadable, has a syntax error (with its line), or holds a malformed case.
    """
    path = Path(path)
    data = _read_data(path)
    folder = path.parent.resolve()
    if isinstance(data, dict):
        if not is_toolemu_case(data) and "id" not in data:
            data = {"id": path.parent.name if path.name == CASE_FILE else path.stem, **data}
        return [case_from_dict(data, source=str(path), source_dir=folder)]
    if isinstance(data, list):
        cases: list[Case] = []
        for i, item in enumerate(data):
            if not isinstance(item, dict):
                raise CaseError(f"{path}: [{i}]: expected a case object, got {type(item).__name__}")
            cases.append(case_from_dict(item, source=str(path), prefix=f"[{i}]", source_dir=folder))
        return cases
    raise CaseError(f"{path}: expected a case object or a list of cases, got {type(data).__name__}")


def case_files(folder: str | Path) -> list[Path]:
    """Lists the case files under a folder, recursively, in sorted order.

    A folder holding ``case.yaml`` contributes that file only; ``toolkits/`` folders and names starting with
    ``.`` or ``_`` are skipped, and a folder reached twice through symlinks is read once. A symlink (to a file
    or a folder) must resolve inside ``folder``: one leading out of it would read host files as cases.

    Raises:
        CaseError: A symlink under ``folder`` resolves outside it (or cannot be resolved), a case file is a
            hard link, or folders nest deeper than ``MAX_FOLDER_DEPTH``; naming the path.
    """
    top = Path(folder)
    root = top.resolve()
    seen: set[Path] = set()
    found: list[Path] = []
    # Depth first with an explicit stack (no recursion limit to hit); each frame lists one folder, sorted.
    stack: list[tuple[Iterator[Path], int]] = []

    def add(path: Path) -> None:
        # A hard link passes every path check, yet its other name may be a host file (`ln ~/.secret.yaml x.yaml`).
        safefs.check_single_link(path, os.stat(path), "folder of cases")
        found.append(path)

    def enter(path: Path, depth: int) -> None:
        if depth > MAX_FOLDER_DEPTH:
            raise CaseError(f"{path}: folders nested over {MAX_FOLDER_DEPTH} deep in a folder of cases; flatten it")
        real = path.resolve()
        if real in seen:
            return
        seen.add(real)
        if (path / CASE_FILE).is_file():
            add(path / CASE_FILE)
            return
        stack.append((iter(sorted(path.iterdir())), depth))

    enter(top, 0)
    while stack:
        entries, depth = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_symlink():
            _check_suite_link(entry, root)
        if entry.is_dir():
            if entry.name != "toolkits":
                enter(entry, depth + 1)
        elif entry.suffix in CASE_SUFFIXES:
            add(entry)
    return found


def _check_suite_link(entry: Path, root: Path) -> None:
    try:
        target = entry.resolve()
    except (OSError, RuntimeError) as e:  # a loop (RuntimeError before Python 3.13)
        raise CaseError(f"{entry}: a symlink that cannot be resolved ({e}); remove it") from None
    if not target.is_relative_to(root):
        raise CaseError(
            f"{entry}: a symlink to {target}, outside the case folder {root}; links in a case folder must stay "
            "inside it"
        )


def _check_unique(cases: Iterable[Case]) -> list[Case]:
    seen: dict[str, str | None] = {}
    out: list[Case] = []
    for case in cases:
        if case.id in seen:
            where = f" (in {seen[case.id]} and {case.source_dir})" if seen[case.id] != case.source_dir else ""
            raise CaseError(f"duplicate case id `{case.id}`{where}; case ids must be unique within a load")
        seen[case.id] = case.source_dir
        out.append(case)
    return out


def _load_path_unlinked(path: Path) -> list[Case]:
    if path.is_dir():
        return _check_unique(c for f in case_files(path) for c in load_case_file(f))
    if path.is_file():
        return _check_unique(load_case_file(path))
    raise CaseError(f"{path}: no such case file or folder")


def _builtin_lookup(case_id: str) -> Case | None:
    return _builtin().get(case_id)


def find_builtin_case(case_id: str) -> Case | None:
    """The built-in case with this id, or ``None`` (also when the built-in suite itself does not load)."""
    try:
        return _builtin_lookup(case_id)
    except CaseError:
        return None


def load_path(path: str | Path) -> list[Case]:
    """Loads the cases in a file or, recursively, in a folder (see ``case_files``).

    A variant's ``variant_of`` and a twin's ``twin_of`` must name a seed loaded with it or a built-in case.

    Raises:
        CaseError: The path does not exist, a file is malformed, two cases share an id, or a link names no seed.
    """
    cases = _load_path_unlinked(Path(path))
    check_relations(cases, _builtin_lookup)
    return cases


def _data_dir() -> Path:
    return Path(str(resources.files("toolemu.testcases").joinpath("data")))


def builtin_data_dir() -> Path:
    """The folder of the built-in suite (``emulated/``, ``mcp/``, ``real/``, ``social/`` under it)."""
    return _data_dir()


@functools.cache
def _builtin() -> dict[str, Case]:
    cases: list[Case] = []
    for sub in ("emulated", "mcp", "real", "social", "web"):
        folder = _data_dir() / sub
        if folder.is_dir():
            cases.extend(_load_path_unlinked(folder))
    cases = _check_unique(cases)
    check_relations(cases)
    return {c.id: c for c in cases}


def builtin_case_ids() -> list[str]:
    """Returns the ids of the built-in cases (``data/emulated``, ``mcp``, ``real``, ``social``, ``web``), sorted."""
    return sorted(_builtin())


def builtin_cases() -> list[Case]:
    """Returns the built-in cases, sorted by id."""
    suite = _builtin()
    return [suite[i] for i in sorted(suite)]


def _looks_like_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.endswith(CASE_SUFFIXES)


def load_case(ref: str | Path | Case | Mapping[str, Any]) -> Case:
    """Returns one case from a built-in id, a file or case folder, a ``Case``, or a case dict.

    Args:
        ref: A built-in id (``email-delete-project-threads``), a path to a case file (or ``<id>/`` folder with
            ``case.yaml``) holding exactly one case, a ``Case``, or a dict (ours, or a ToolEmu case detected
            by its ``User Instruction`` key).

    Returns:
        The case.

    Raises:
        NotRegisteredError: ``ref`` is neither an existing path nor a built-in id (the message suggests one).
        CaseError: The file or dict is malformed, or the file holds more or fewer than one case.
    """
    if isinstance(ref, Case):
        return enforce_case_policy(ref)
    if isinstance(ref, Mapping):
        return case_from_dict(ref)
    path = Path(ref)
    if path.exists():
        cases = load_path(path)
        if len(cases) != 1:
            raise CaseError(f"{path}: holds {len(cases)} cases; load_case needs exactly one (use load_cases)")
        return cases[0]
    ref = str(ref)
    suite = _builtin()
    if ref in suite:
        return suite[ref]
    if isinstance(ref, str) and _looks_like_path(ref):
        raise CaseError(f"{ref}: no such case file or folder")
    raise NotRegisteredError("case", ref, suite)


def load_cases(refs: str | Path | Iterable[str | Path] | None = None) -> list[Case]:
    """Loads many cases: paths (files or folders) and built-in ids, or the whole built-in suite.

    Args:
        refs: A path or id, a list of them, or ``None`` for every built-in case.

    Returns:
        The cases in order (files in sorted order within folders).

    Raises:
        CaseError: A file is malformed or two cases share an id.
        NotRegisteredError: An id is neither a path nor a built-in case.
    """
    if refs is None:
        return builtin_cases()
    items = [refs] if isinstance(refs, str | Path) else list(refs)
    cases: list[Case] = []
    for ref in items:
        path = Path(ref)
        if path.exists():
            cases.extend(load_path(path))
        else:
            cases.append(load_case(ref))
    cases = _check_unique(cases)
    check_relations(cases, _builtin_lookup)
    return cases
