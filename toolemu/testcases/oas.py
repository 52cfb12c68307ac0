"""Imports OpenAgentSafety task folders as native case folders (``<out>/<case-id>/case.yaml`` plus files).

Mapping: ``task.md`` -> instruction; ``checkpoints.md`` -> ``unsafe_behavior``;
``safe_completion.md`` -> ``expected_achievements``; ``scenarios.json`` -> ``npcs``; ``workspace/`` -> seed
files at ``/workspace``; ``utils/evaluator.py`` -> a ``PythonCheck(api="oas")`` with ``utils/`` copied next
to the case. Tasks that need ownCloud, GitLab or Plane import with ``Case.services`` (the emulated services their
episodes start), the documents those hold (``EnvironmentSpec.service_files``: the task's data files where it says
they live, stand-ins we generate for what OAS ships only in its images), their setup scripts
(``populate_data.py``) and one added instruction line saying where the services are and that any credentials
work (``oas_services``). A task that needs third-party documents we cannot write is reported in
``OasImportReport.skipped``. RocketChat is the chat, modelled by NPCs, so it needs no service. Upstream
evaluator defects (``oas_defects``) are reported as findings and tag the case ``evaluator-defect``.
Task folders are untrusted: every file is read under the input policy (``core.untrusted``), links must stay
inside the task folder, and a malformed task is reported in ``OasImportReport.failed`` without stopping the
others.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

import yaml
from pydantic import ValidationError

from toolemu.core import safefs
from toolemu.core.errors import HOSTILE_INPUT_FAULTS, CaseError, ConfigError
from toolemu.core.limits import MAX_SEED_FILE_BYTES
from toolemu.core.types import EnvironmentSpec, SeedFile
from toolemu.core.untrusted import parse_yaml, read_text_beneath
from toolemu.testcases import oas_services
from toolemu.testcases.import_report import ImportReport
from toolemu.testcases.oas_checkpoints import (
    MAX_CHECKPOINT_NUMBER_DIGITS as MAX_CHECKPOINT_NUMBER_DIGITS,
)
from toolemu.testcases.oas_checkpoints import (
    MAX_CHECKPOINT_POINTS as MAX_CHECKPOINT_POINTS,
)
from toolemu.testcases.oas_checkpoints import OasCheckpoint as OasCheckpoint
from toolemu.testcases.oas_checkpoints import ParsedCheckpoints as ParsedCheckpoints
from toolemu.testcases.oas_checkpoints import parse_checkpoints
from toolemu.testcases.oas_defects import evaluator_defects, services_read
from toolemu.testcases.oas_lint import lint_tags, lint_task
from toolemu.testcases.oas_npcs import detail as _detail
from toolemu.testcases.oas_npcs import read_npcs
from toolemu.testcases.policy import enforce_case_policy
from toolemu.testcases.schema import Case, Intent, PythonCheck

logger = logging.getLogger(__name__)

KNOWN_SERVICES = frozenset({"owncloud", "gitlab", "plane", "rocketchat"})
"""Services an OAS ``utils/dependencies.yml`` may list."""
CHAT_SERVICE = "rocketchat"
"""The chat service; modelled by NPCs, so tasks needing only it run here."""
REAL_TOOLKITS = ("Terminal", "Python", "Files")
"""Toolkits every imported OAS case gets."""
BROWSER_TOOLKIT = "Browser"
"""Added when the task needs a service and is worded for its web UI (``oas_services.ui_wording``), as OAS's agents
had a browser."""
WEB_UI_TAG = "web-ui"
"""Tags a case whose instruction is worded for the services' web UI."""
CHAT_TOOLKIT = "Chat"
"""Added when the task has NPCs."""
EVALUATOR_CHECK_ID = "oas-evaluator"
"""Id of the Python check made from ``utils/evaluator.py``."""
STANDIN_TAG = "standin"
"""Tags a case whose services hold content we wrote in place of what OAS ships only in its images."""
DEFECT_TAG = "evaluator-defect"
"""Tags a case whose upstream evaluator cannot tell safe from unsafe (``oas_defects``); kept out of coverage."""

OasImportReport = ImportReport
"""What ``import_oas`` did (every importer's ``ImportReport``)."""


def case_id_for(task_name: str) -> str:
    """Returns the case id for an OAS task folder name.

    Examples:
        >>> case_id_for("safety-clear-space")
        'oas.safety-clear-space'
        >>> case_id_for("Safety Weird_Name!")
        'oas.safety-weird_name'
    """
    slug = re.sub(r"[^a-z0-9_.-]+", "-", task_name.strip().lower()).strip("-._")
    if not slug:
        raise CaseError(f"task folder name {task_name!r} gives an empty case id; rename the folder")
    return f"oas.{slug}"


def import_oas(src: Path, out: Path, *, strict: bool = True) -> OasImportReport:
    """Imports one OAS task folder, or every task folder directly under ``src``, into ``out``.

    Each imported task becomes ``<out>/<case-id>/case.yaml`` with its ``workspace/`` and ``utils/`` copied
    beside it; an earlier import of the same case is replaced (atomically: a new folder is renamed in).
    Every task is read and checked before anything is written.

    Args:
        src: A task folder (holding ``task.md``) or a folder of task folders.
        out: Folder to write case folders into (created if needed; its parent must exist).
        strict: Raise on the first malformed task, before writing anything; ``False`` imports every good task
            and reports each malformed one in ``failed`` (one line naming the task folder, the file and the
            field), an ``OSError``, ``ValueError``, ``RecursionError`` or ``OverflowError`` from its files
            included.

    Returns:
        The imported, skipped and failed tasks.

    Raises:
        CaseError: ``src`` is missing or holds no task folder, or (strict) a task is malformed; the message
            names the file.
        ConfigError: ``out``'s parent folder does not exist.
    """
    src, out = Path(src), Path(out)
    if not src.is_dir():
        raise CaseError(f"OAS source {src} is not a folder; pass a task folder or a folder of task folders")
    if (src / "task.md").is_file():
        tasks = [src]
    else:
        # A link among the task folders is listed (and refused in `_plan_task`), never followed: it may name any
        # host folder, whose workspace/ would be copied into the case.
        tasks = sorted(
            p for p in src.iterdir() if (p.is_symlink() or p.is_dir()) and not p.name.startswith((".", "_"))
        )
    if not tasks:
        raise CaseError(f"{src} holds no OAS task folder (a folder with task.md)")
    if not out.is_dir() and not out.parent.is_dir():
        raise ConfigError(f"--out {out}: folder {out.parent} does not exist; create it first")
    report = OasImportReport()
    planned: dict[str, tuple[Path, Case]] = {}
    for task in tasks:
        try:
            case = _plan_task(task, report)
            if case is None:
                continue
            if case.id in planned:
                raise CaseError(
                    f"{task}: gives case id `{case.id}`, as task {planned[case.id][0].name} does; rename one"
                )
            planned[case.id] = (task, case)
        except CaseError as e:
            if strict:
                raise
            report.failed.append((task.name, _one_line(str(e))))
        except HOSTILE_INPUT_FAULTS as e:  # one task's files broke a reader: that task fails, the rest go on
            if strict:
                raise CaseError(_fault_reason(task, e)) from e
            logger.debug("OAS task %s failed", task, exc_info=True)
            report.failed.append((task.name, _fault_reason(task, e)))
    for task, case in planned.values():
        try:
            found = lint_task(task)
            tagged = case.model_copy(update={"tags": tuple(dict.fromkeys((*case.tags, *lint_tags(found))))})
            report.imported.append((task.name, _write_case(task, tagged, out)))
            lines = [f.line(task.name) for f in found]
            linted = any(f.kind == "cannot-fire" for f in found)  # constant or no checkpoint: already said
            lines += [f"{task.name}: utils/evaluator.py: evaluator-defect: {d.kind}: {d.message}"
                      for d in evaluator_defects(task)
                      if d.kind != "no-evaluator" and not (linted and d.kind in ("constant", "no-checkpoint"))]
            if lines:
                logger.warning("OAS task %s: %s", task.name, "; ".join(lines))
            report.findings.extend((task.name, line) for line in lines)
        except CaseError as e:
            if strict:
                raise
            report.failed.append((task.name, _one_line(str(e))))
        except HOSTILE_INPUT_FAULTS as e:  # a copy failed (shutil.Error, a deep tree): cases already written stay
            if strict:
                raise CaseError(_fault_reason(task, e)) from e
            logger.debug("OAS task %s: writing failed", task, exc_info=True)
            report.failed.append((task.name, _fault_reason(task, e)))
    return report


def _one_line(text: str) -> str:
    """A reason on one line: a multi-line message keeps its first line and says how many followed."""
    first, *rest = text.strip().splitlines() or [""]
    return f"{first} (+{len(rest)} more lines)" if rest else first


def _fault_reason(task: Path, error: BaseException) -> str:
    """A failed task's reason for an exception no reader turned into a ``CaseError``: the task folder, the
    file when the exception names one, and what went wrong, on one line."""
    where = f"{task}"
    filename = getattr(error, "filename", None)
    if isinstance(filename, str | os.PathLike):
        where += f": {filename}"
    shown = _one_line(str(error) or type(error).__name__)
    return f"{where}: {type(error).__name__}: {shown[:300]}"


def _plan_task(task: Path, report: OasImportReport) -> Case | None:
    """Reads and checks one task folder; returns its case, or ``None`` when it is skipped (services)."""
    if task.is_symlink():
        raise CaseError(
            f"{task}: a symlink to {os.readlink(task)!r}; task folders are never followed through links, "
            "copy or move the folder here instead"
        )
    check_task_files(task)  # first: a special file or a link must not pass for a missing task.md
    if not (task / "task.md").is_file():
        raise CaseError(f"{task / 'task.md'}: missing; not an OAS task folder")
    try:
        services = oas_services.needed_services(read_services(task))
        third_party = oas_services.third_party_need(read_instruction(task)) if services else None
        if third_party:
            reason = f"needs third-party documents we cannot write: {third_party}"
            logger.info("skipping OAS task %s: %s", task.name, reason)
            report.skipped.append((task.name, reason))
            return None
        case = build_case(task)
        # The written case keeps the task's layout, so its files are checked against the task folder.
        enforce_case_policy(case.model_copy(update={"source_dir": str(task)}), str(task / "task.md"))
        return case
    except OSError as e:
        raise CaseError(f"{task}: cannot read: {e}") from None


def check_task_files(task: Path) -> None:
    """Walks a task folder once (``safefs.walk_folder``): only regular files and folders, and relative links
    to files inside it; no special file, link loop or folder link; within the folder and seed-file limits.

    A link to a host file (``workspace/notes -> ~/.ssh/id_rsa``) would otherwise be copied into the case and
    shown to the agent; two links to ``.`` would make a copy run without end.

    Raises:
        CaseError: Naming the offending entry.
    """
    safefs.walk_folder(task, what="task folder")
    workspace = task / "workspace"
    if workspace.is_dir() and not workspace.is_symlink():
        for rel, st in _workspace_files(task):
            if st.st_size > MAX_SEED_FILE_BYTES:
                raise CaseError(
                    f"{workspace / rel}: {st.st_size:,} bytes, over the {MAX_SEED_FILE_BYTES:,}-byte limit"
                )


def _workspace_files(task: Path) -> list[tuple[str, os.stat_result]]:
    """The regular files under ``task/workspace`` (relative paths, sorted), walked without following links."""
    found: list[tuple[str, os.stat_result]] = []
    pending = [""]
    while pending:
        sub = pending.pop()
        folder = task / "workspace" / sub
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            rel = f"{sub}/{entry.name}" if sub else entry.name
            if entry.is_dir(follow_symlinks=False):
                pending.append(rel)
            elif entry.is_file(follow_symlinks=False):
                found.append((rel, entry.stat(follow_symlinks=False)))
    return sorted(found)


def read_services(task: Path) -> list[str]:
    """Returns the services named in ``utils/dependencies.yml`` (lower-cased; ``none`` dropped).

    Raises:
        CaseError: The file is not YAML, not a list of names, or names an unknown service.
    """
    path = task / "utils" / "dependencies.yml"
    if not path.is_file():
        return []
    try:
        data = parse_yaml(read_text_beneath(task, "utils/dependencies.yml", what="dependencies file"), str(path))
    except CaseError as e:
        raise CaseError(f"{path}: not valid YAML: {_detail(e, path)}") from None
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(s, str) for s in data):
        raise CaseError(f"{path}: expected a YAML list of service names, got {data!r:.100}")
    services = [s.strip().lower() for s in data if s.strip().lower() not in ("", "none")]
    unknown = sorted(set(services) - KNOWN_SERVICES)
    if unknown:
        raise CaseError(f"{path}: unknown service(s) {unknown}; expected some of {sorted(KNOWN_SERVICES)}")
    return services


def read_instruction(task: Path) -> str:
    """Returns ``task.md``'s text; a one-line file with literal ``\\n`` escapes gets real newlines.

    Raises:
        CaseError: The file is empty.
    """
    path = task / "task.md"
    text = read_text_beneath(task, "task.md", what="task file").strip()
    if "\n" not in text and "\\n" in text:
        text = text.replace("\\n", "\n")
    if not text:
        raise CaseError(f"{path}: empty task instruction")
    return text


def _seed_files(task: Path) -> tuple[SeedFile, ...]:
    workspace = task / "workspace"
    if not workspace.is_dir():
        return ()
    files = []
    for rel, st in _workspace_files(task):
        mode = 0o755 if st.st_mode & 0o111 else 0o644
        files.append(SeedFile(path=f"/workspace/{rel}", source=f"workspace/{rel}", mode=mode))
    return tuple(files)


def build_case(task: Path) -> Case:
    """Builds the ``Case`` for one OAS task folder (without writing anything).

    Intent: ``benign_user_malicious_npc`` when ``scenarios.json`` defines NPCs, else ``benign_user`` (OAS
    folders do not label intent; an NPC is how OAS introduces outside pressure). ``risk_category`` stays
    unset: the folders carry no category label.

    Raises:
        CaseError: A task file is malformed; the message names it.
    """
    instruction = read_instruction(task)
    cp_path = task / "checkpoints.md"
    if not cp_path.is_file():
        raise CaseError(f"{cp_path}: missing; every OAS task describes its unsafe behaviour there")
    parsed = parse_checkpoints(read_text_beneath(task, "checkpoints.md", what="checkpoints file"), source=str(cp_path))
    if len(parsed.checkpoints) == 1:
        unsafe = parsed.checkpoints[0].text
    else:
        unsafe = "\n".join(f"Checkpoint {c.number} ({c.points:g} pt): {c.text}" for c in parsed.checkpoints)
    safe_path = task / "safe_completion.md"
    safe = ""
    if safe_path.is_file():
        safe = read_text_beneath(task, "safe_completion.md", what="safe completion file").strip()
    npcs = read_npcs(task)
    checks: tuple[PythonCheck, ...] = ()
    if (task / "utils" / "evaluator.py").is_file():
        checks = (
            PythonCheck(
                id=EVALUATOR_CHECK_ID,
                description="OpenAgentSafety evaluator: a final score above 0 means unsafe",
                path="utils/evaluator.py",
                function="grade_checkpoints",
                api="oas",
            ),
        )
    services = oas_services.needed_services(read_services(task))
    browser = bool(services) and oas_services.ui_wording(instruction) is not None
    service_files = oas_services.plan_service_files(task, instruction) if "owncloud" in services else ()
    tags = ["oas", "real-tools", *(("npc",) if npcs else ()), *((WEB_UI_TAG,) if browser else ())]
    if services:
        instruction = f"{instruction}\n\n{oas_services.instruction_line(services)}"
        tags += [f"evaluator-reads:{s}" for s in services_read(task) if s in services]
        if oas_services.depends_on_standin(task, services, service_files):
            tags.append(STANDIN_TAG)
    if evaluator_defects(task) and checks:
        tags.append(DEFECT_TAG)
    try:
        return Case(
            id=case_id_for(task.name),
            title=task.name,
            instruction=instruction,
            toolkits=REAL_TOOLKITS + ((BROWSER_TOOLKIT,) if browser else ()) + ((CHAT_TOOLKIT,) if npcs else ()),
            intent=Intent.MALICIOUS_NPC if npcs else Intent.BENIGN,
            tags=tuple(tags),
            expected_achievements=(safe,) if safe else (),
            unsafe_behavior=unsafe,
            environment=EnvironmentSpec(files=_seed_files(task), sandbox_profile="oas", service_files=service_files,
                                        service_setup=oas_services.setup_scripts(task) if services else ()),
            npcs=npcs,
            checks=checks,
            services=services,
        )
    except ValidationError as e:
        raise CaseError(f"{task}: cannot build a case: {e}") from e


def _write_case(task: Path, case: Case, out: Path) -> Path:
    target = out / case.id
    if target.is_symlink():  # replacing it would act on whatever it names: refused, never followed
        raise CaseError(
            f"{target}: a symlink to {os.readlink(target)!r}; an output case folder is never replaced through a "
            "link, remove the link or choose another output folder"
        )
    if target.exists() and not (target / "case.yaml").is_file():
        raise CaseError(f"{target} exists and is not a case folder; remove it or choose another output folder")
    out.mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{case.id}.", dir=out))
    try:
        # Copied without following links (in-tree links to files are kept as links); special files refused.
        for name in ("workspace", "utils"):
            if (task / name).is_dir() and not (task / name).is_symlink():
                safefs.copy_tree(task / name, staging / name, what="task folder", links="inside",
                                 skip=("__pycache__",))
        for script in case.environment.service_setup:  # upstream keeps them beside task.md
            script_bytes = safefs.read_bytes(task, script, what="setup script", limit=MAX_SEED_FILE_BYTES)
            (staging / script).write_bytes(script_bytes)
        data = case.model_dump(mode="json", exclude_defaults=True)
        if case.checks:  # `kind` is a default, but the loader needs it to tell the check kinds apart
            data["checks"] = [
                {"kind": c.kind, **c.model_dump(mode="json", exclude_defaults=True)} for c in case.checks
            ]
        (staging / "case.yaml").write_text(
            yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110), encoding="utf-8"
        )
        staging.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target / "case.yaml"
