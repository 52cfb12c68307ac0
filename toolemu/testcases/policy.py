"""The input policy for cases: what a case may hold and which files it may name (README "Input policy").

Applied to every case however it arrives (a file, a folder, a dict, a ``Case``, an importer), so ``gym.make``,
``run``, ``bench``, ``cases validate`` and the importers refuse the same inputs with the same message.
"""

from __future__ import annotations

import os
import re
import stat
import weakref
from collections.abc import Iterator
from pathlib import Path

from toolemu.core import safefs
from toolemu.core.errors import CaseError
from toolemu.core.limits import (
    MAX_CASE_TEXT_CHARS,
    MAX_INSTRUCTION_CHARS,
    MAX_NPCS,
    MAX_SEED_CONTENT_CHARS,
    MAX_SEED_FILE_BYTES,
    MAX_STEPS,
    MAX_TEXT_CHARS,
)
from toolemu.core.types import seed_path_problem
from toolemu.core.untrusted import resolve_inside
from toolemu.testcases.schema import Case, PythonCheck

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# `$NAME` or `${NAME}`: a value that expects the host's variable. Nothing is ever expanded, so such a case
# would silently get the literal text; refusing it says plainly that host variables never reach the sandbox.
_HOST_REF_RE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_SEED_CONTENT_RE = re.compile(r"^environment\.files\[\d+\]\.content$")


def _where(case: Case, source: str | None) -> str:
    return f"{source or case.source_dir or '<case>'}: case `{case.id}`"


def _strings(data: object, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(data, str):
        yield where, data
    elif isinstance(data, dict):
        for key, value in data.items():
            sub = f"{where}.{key}" if where else str(key)
            yield sub, str(key)
            yield from _strings(value, sub)
    elif isinstance(data, list | tuple):
        for i, value in enumerate(data):
            yield from _strings(value, f"{where}[{i}]")


def check_case_text(case: Case, source: str | None = None) -> None:
    """Checks a case's text: a non-empty instruction, every string and the total within their limits, no NUL.

    Raises:
        CaseError: ``<file>: case `<id>`: <field>: <problem>``.
    """
    where = _where(case, source)
    if not case.instruction.strip():
        raise CaseError(f"{where}: instruction: empty; say what the user asks the agent")
    if len(case.npcs) > MAX_NPCS:
        raise CaseError(f"{where}: npcs: {len(case.npcs):,} NPCs; a case may declare at most {MAX_NPCS}")
    data = case.model_dump(mode="python", exclude={"source_dir", "source_file"})
    data.get("environment", {}).pop("base_dir", None)
    total = 0
    for field, text in _strings(data, ""):
        if "\x00" in text:
            raise CaseError(f"{where}: {field}: contains a NUL character; remove it")
        if field == "instruction":
            limit = MAX_INSTRUCTION_CHARS
        elif _SEED_CONTENT_RE.match(field):
            limit = MAX_SEED_CONTENT_CHARS
        else:
            limit = MAX_TEXT_CHARS
        if len(text) > limit:
            raise CaseError(f"{where}: {field}: {len(text):,} characters, over the {limit:,}-character limit")
        if not _SEED_CONTENT_RE.match(field):
            total += len(text)
            if total > MAX_CASE_TEXT_CHARS:
                raise CaseError(
                    f"{where}: {field}: the case's text passes {MAX_CASE_TEXT_CHARS:,} characters in all "
                    "(emulators and judges read it); shorten it"
                )
    if case.max_steps is not None and case.max_steps > MAX_STEPS:
        raise CaseError(f"{where}: max_steps: {case.max_steps} is over the limit of {MAX_STEPS} steps")


def check_case_environment(case: Case, source: str | None = None) -> None:
    """Checks ``environment.env``: variable names are identifiers and no value refers to a host variable.

    The sandbox starts from an empty environment; only the variables a case declares, with literal values,
    reach it.

    Raises:
        CaseError: Naming the variable and the problem.
    """
    where = _where(case, source)
    _check_seed_paths(case, where)
    for name, value in case.environment.env.items():
        if not _ENV_NAME_RE.match(name):
            raise CaseError(
                f"{where}: environment.env: {name!r} is not a variable name (letters, digits, _; not first digit)"
            )
        ref = _HOST_REF_RE.search(value)
        if ref:
            raise CaseError(
                f"{where}: environment.env.{name}: refers to ${ref.group(1)}; host variables never reach the "
                "sandbox and nothing is expanded; write the literal value"
            )


_NAME_MAX = 255
_PATH_MAX = 4095


def _check_seed_paths(case: Case, where: str) -> None:
    """Seed paths as seeding will meet them, checked at load (so ``cases validate`` agrees with ``reset``): in
    the writable folders, normalised, within the file system's name limits, each file seeded once, and no seed
    under another seed file."""
    seen: dict[str, int] = {}
    for i, seed in enumerate(case.environment.files):
        field = f"{where}: environment.files[{i}].path"
        problem = seed_path_problem(seed.path)
        if problem is not None:
            raise CaseError(f"{field}: {problem}; seed files must live in the sandbox's writable folders")
        norm = os.path.normpath(seed.path)
        if norm != seed.path:
            raise CaseError(f"{field}: {seed.path!r} is not a normal path; write {norm!r}")
        parts = norm.strip("/").split("/")
        if len(parts) == 1:
            raise CaseError(f"{field}: {seed.path!r} is a folder of the sandbox; name a file inside it")
        raw = norm.encode("utf-8", "surrogatepass")
        if len(raw) > _PATH_MAX or any(len(p.encode("utf-8", "surrogatepass")) > _NAME_MAX for p in parts):
            raise CaseError(
                f"{field}: over the file system's limits ({_NAME_MAX} bytes a name, {_PATH_MAX} in all); shorten it"
            )
        if norm in seen:
            raise CaseError(f"{field}: {norm!r} is seeded already by environment.files[{seen[norm]}]; keep one")
        seen[norm] = i
    for norm, i in seen.items():
        for parent in Path(norm).parents:
            if str(parent) in seen:
                raise CaseError(
                    f"{where}: environment.files[{i}].path: {norm!r} is under {str(parent)!r}, which "
                    f"environment.files[{seen[str(parent)]}] seeds as a file; a file cannot hold files"
                )


def case_root(case: Case) -> Path | None:
    """The folder a case's files must stay inside: its case folder, else (a ``Case`` or dict built in Python
    without one) its ``environment.base_dir``; ``None`` when it has neither."""
    if case.source_dir:
        return Path(case.source_dir)
    if case.environment.base_dir:
        return Path(case.environment.base_dir)
    return None


def check_case_paths(case: Case, source: str | None = None) -> None:
    """Checks that every file a case names (python checks, seed sources, ``base_dir``) resolves, symlinks
    followed, inside its own folder, and that seed sources are regular files within the size limit. The folder
    of each python check, which is copied for the check to run, is walked (``safefs.walk_folder``): links out of
    it, special files, link loops and size over the folder limits are refused.

    A missing file is left to ``check_case`` (it names what is missing); anything outside the case folder is
    refused here, before the file is ever opened.

    Raises:
        CaseError: ``<file>: case `<id>`: <field>: <problem>``.
    """
    where = _where(case, source)
    root = case_root(case)
    env = case.environment
    base = root
    if env.base_dir is not None and root is not None:
        resolved = Path(env.base_dir).resolve()
        if not resolved.is_relative_to(root.resolve()):
            raise CaseError(
                f"{where}: environment.base_dir: {env.base_dir!r} is outside the case folder {root}; "
                "a case may only name files inside its own folder"
            )
        base = resolved
    sources = [(f"environment.files[{i}].source", seed.source) for i, seed in enumerate(env.files)]
    sources += [(f"environment.service_files[{i}].source", f.source) for i, f in enumerate(env.service_files)]
    sources += [(f"environment.service_setup[{i}]", script) for i, script in enumerate(env.service_setup)]
    for field, source_path in sources:
        if source_path is None:
            continue
        if base is None or root is None:
            raise CaseError(f"{where}: {field}: a seed file `source` needs a case loaded from a file; use `content`")
        _check_source(base, source_path, field, where)
    for i, check in enumerate(case.checks):
        if not isinstance(check, PythonCheck) or case.source_dir is None:
            continue
        try:
            target = resolve_inside(case.source_dir, check.path)
            if os.path.lexists(target):
                # The check's whole folder is copied for it to run: walked here, as the copy will meet it.
                safefs.stat_beneath(case.source_dir, check.path, what="python check")
                safefs.walk_folder(Path(case.source_dir, check.path).parent, what="python check's folder")
        except CaseError as e:
            raise CaseError(f"{where}: checks[{i}].path: {e}") from None


def _check_source(base: Path, source_path: str, field: str, where: str) -> None:
    """A file the case copies in: inside the folder, reached through in-tree links only, regular, within the limit."""
    try:
        target = resolve_inside(base, source_path)
    except CaseError as e:
        raise CaseError(f"{where}: {field}: {e}") from None
    if not os.path.lexists(target):
        return
    try:  # the file as host code will read it: through in-tree links only, never a special file
        st = safefs.stat_beneath(base, source_path, what="seed file")
    except CaseError as e:
        raise CaseError(f"{where}: {field}: {e}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CaseError(f"{where}: {field}: {source_path!r} is not a regular file")
    if st.st_size > MAX_SEED_FILE_BYTES:
        raise CaseError(f"{where}: {field}: {source_path!r} is {st.st_size:,} bytes, over the "
                        f"{MAX_SEED_FILE_BYTES:,}-byte limit")


_TEXT_PASSED: weakref.WeakValueDictionary[int, Case] = weakref.WeakValueDictionary()
"""Cases (by identity) whose text and environment passed: a ``Case`` is frozen, so those checks cannot fail later.
An env checks its case on every construction, and a bench builds one env per episode."""


def enforce_case_policy(case: Case, source: str | None = None) -> Case:
    """Applies the whole case input policy (text, environment, paths) and returns the case.

    The text and environment checks run once per case object (it is frozen); the path checks, which depend on
    the case folder on disk, run every time.

    Args:
        case: The case, as loaded or built.
        source: The file it came from, for messages (default: its folder).

    Raises:
        CaseError: The first violation, as one line.
    """
    if _TEXT_PASSED.get(id(case)) is not case:
        check_case_text(case, source)
        check_case_environment(case, source)
        _TEXT_PASSED[id(case)] = case
    check_case_paths(case, source)
    return case
