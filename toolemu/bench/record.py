"""``EpisodeRecord``: one finished episode as stored in a results file (one JSON object per line)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import Field

from toolemu.agents.defenses import DefenseEvent
from toolemu.core import safefs
from toolemu.core.capture import Capture, CapturedCheck, ServiceGap
from toolemu.core.errors import ConfigError
from toolemu.core.limits import MAX_SEED_FILE_BYTES
from toolemu.core.outfiles import check_output_path, dump_json
from toolemu.core.trajectory import EpisodeStatus, ErrorRecord, FinalState, Trajectory
from toolemu.core.types import Frozen, ToolkitSpec
from toolemu.rewards.evaluation import Evaluation
from toolemu.testcases import Case
from toolemu.testcases.schema import PythonCheck

logger = logging.getLogger(__name__)

RECORD_SCHEMA_VERSION = 3
"""2: records carry the case and the raw results of sandboxed checks (``checks``), so they can be re-scored.
3: a replayed or imported run's own OpenHands log (``openhands_log``); older records read with none."""


RecordKey = tuple[str, str, str, int, str | None]
"""(case id, config hash, case hash, trial, attack): what a results file holds one latest record of."""


class EpisodeRecord(Frozen):
    """A finished episode with its evaluation, keyed by (case id, config hash, trial)."""

    schema_version: int = RECORD_SCHEMA_VERSION
    """Version of this record's shape."""
    case_id: str
    """The case."""
    config_hash: str
    """Hash of the run configuration (agent, models, env settings, prompt/judge/emulator versions)."""
    case_hash: str = ""
    """Hash of the case's content: a record of an edited case is not resumed as if it were current."""
    trial: int
    """Trial number for repeated runs of one case."""
    attack: str | None = None
    """The attack the episode ran under (``Case.attack``; ``bench --attack``), ``None`` unattacked: each (case,
    attack) is its own record."""
    risk_category: str | None = None
    """The case's risk category."""
    intent: str | None = None
    """The case's intent."""
    toolkits: tuple[str, ...] = ()
    """The case's toolkits."""
    status: EpisodeStatus
    """How the episode ended; ``error`` episodes have no scores."""
    reward: float | None = None
    """The combined reward, when evaluated."""
    trajectory: Trajectory
    """All steps."""
    final_state: FinalState | None = None
    """The snapshot rule checks read."""
    checks: tuple[CapturedCheck, ...] = ()
    """Raw results of the checks that ran in the sandbox during capture (Python, OAS, large-file regexes)."""
    toolkit_specs: tuple[ToolkitSpec, ...] = ()
    """The tools the agent had, as the judges were shown them."""
    openhands_log: str | None = None
    """A replayed or imported run's own OpenHands log (``Capture.openhands_log``)."""
    service_gaps: tuple[ServiceGap, ...] = ()
    """Requests the episode's emulated services could not answer (``Capture.service_gaps``)."""
    case: Case | None = None
    """The case as it was run, so ``toolemu rescore`` needs nothing but this file."""
    evaluation: Evaluation | None = None
    """Scores, labels, rationales, rule results."""
    error: ErrorRecord | None = None
    """The infra error that ended the episode, if any."""
    seconds: float = 0.0
    """Wall time of the episode, evaluation included."""
    finished_at: float | None = None
    """When the episode ended (Unix time; ``None`` in records written before this field): with ``seconds``, a
    run's timeline, and its episodes/s once started (``benchmarks/bench_concurrency.py``)."""
    llm_retries: dict[str, int] = Field(default_factory=dict)
    """Model calls retried during the episode, by reason (``HTTP 429``, ``timeout``, ``malformed body``...):
    transient failures that a later attempt got past. A call that failed for good ends the episode in error."""
    defense: str | None = None
    """The defense the agent ran behind (``bench --defense``), ``None`` for none; part of the config hash."""
    defense_events: tuple[DefenseEvent, ...] = ()
    """What the defense did: calls it blocked, outputs it withheld, the guard's answers in the agent's place."""

    @classmethod
    def for_case(
        cls,
        case: Case,
        *,
        config_hash: str,
        trial: int,
        trajectory: Trajectory,
        status: EpisodeStatus | None = None,
        capture: Capture | None = None,
        evaluation: Evaluation | None = None,
        error: ErrorRecord | None = None,
        seconds: float = 0.0,
        finished_at: float | None = None,
        llm_retries: dict[str, int] | None = None,
    ) -> EpisodeRecord:
        """Builds a record, copying the case (and its metadata for metrics).

        ``status`` defaults to the trajectory's, or ``error`` when ``error`` is set or the evaluation errored
        (then ``error`` defaults to the evaluation's first error record).
        """
        if error is None and evaluation is not None and evaluation.status == "error":
            error = evaluation.errors[0]
        if status is None:
            status = "error" if error is not None else trajectory.status
        capture = capture or Capture(trajectory=trajectory)
        return cls(
            case_id=case.id,
            config_hash=config_hash,
            case_hash=case_hash(case),
            trial=trial,
            attack=case.attack.name if case.attack is not None else None,
            risk_category=case.risk_category.value if case.risk_category else None,
            intent=case.intent.value if case.intent else None,
            toolkits=case.toolkits,
            status=status,
            reward=evaluation.reward if evaluation is not None else None,
            trajectory=trajectory,
            final_state=capture.final_state,
            checks=capture.checks,
            toolkit_specs=capture.toolkit_specs,
            openhands_log=capture.openhands_log,
            service_gaps=capture.service_gaps,
            case=case,
            evaluation=evaluation,
            error=error,
            seconds=seconds,
            finished_at=finished_at,
            llm_retries=llm_retries or {},
        )

    @property
    def tags(self) -> tuple[str, ...]:
        """The case's tags (the OAS importer's ``oas-cannot-fire`` and ``oas-missing-asset`` among them)."""
        return self.case.tags if self.case is not None else ()

    @property
    def capture(self) -> Capture:
        """What scoring reads: the trajectory, the final state and the captured check results."""
        return Capture(trajectory=self.trajectory, final_state=self.final_state, checks=self.checks,
                       toolkit_specs=self.toolkit_specs, openhands_log=self.openhands_log,
                       service_gaps=self.service_gaps)

    @property
    def key(self) -> RecordKey:
        """Identity of the record within a results file: (case id, config hash, case hash, trial, attack)."""
        return (self.case_id, self.config_hash, self.case_hash, self.trial, self.attack)


def summarise_retries(records: Iterable[EpisodeRecord]) -> str:
    """One line counting the model calls retried over ``records``, by reason.

    Examples:
        >>> r = EpisodeRecord(case_id="c", config_hash="h", trial=0, status="completed",
        ...                   trajectory=Trajectory(case_id="c", instruction="x"), llm_retries={"HTTP 429": 2})
        >>> summarise_retries([r, r])
        'model calls retried: 4 in 2 of 2 episodes (HTTP 429: 4)'
    """
    total: Counter[str] = Counter()
    episodes = retried = 0
    for record in records:
        episodes += 1
        retried += bool(record.llm_retries)
        total.update(record.llm_retries)
    reasons = ", ".join(f"{reason}: {n}" for reason, n in sorted(total.items()))
    line = f"model calls retried: {sum(total.values())} in {retried} of {episodes} episodes"
    return f"{line} ({reasons})" if reasons else line


def case_hash(case: Case) -> str:
    """A short hash of everything in ``case`` that shapes an episode or its grading (not where it was loaded).

    Examples:
        >>> a = Case(id="c", instruction="x", toolkits=("T",))
        >>> case_hash(a) == case_hash(a.model_copy(update={"source_dir": "/elsewhere"}))
        True
        >>> case_hash(a) == case_hash(a.model_copy(update={"instruction": "y"}))
        False
    """
    content = case.model_dump(mode="json", exclude={"source_dir", "source_file"})
    content["environment"].pop("base_dir", None)
    blob = canonical_json(content)
    if case.source_dir:
        # Files a case points to (python checks, seed sources) are part of it too.
        blob += "".join(_file_digest(Path(case.source_dir), p) for p in _case_files(case))
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def canonical_json(value: object, *, ensure_ascii: bool = False) -> str:
    """The one JSON text of ``value`` that every process agrees on: what run and case hashes are taken of.

    Keys sorted, ``json``'s default separators (so hashes of earlier results files still match). A ``set``
    or ``frozenset``, whose iteration order depends on ``PYTHONHASHSEED``, becomes a list sorted by its items'
    canonical JSON; a tuple is a list. Anything else that is not JSON is shown with ``str`` (a path).

    Examples:
        >>> canonical_json({"b": frozenset({"y", "x"}), "a": (1, 2.5)})
        '{"a": [1, 2.5], "b": ["x", "y"]}'
    """
    return json.dumps(_canonical(value), sort_keys=True, ensure_ascii=ensure_ascii, default=str)


def _canonical(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    if isinstance(value, set | frozenset):
        items = [_canonical(v) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False, default=str))
    return value


def _case_files(case: Case) -> list[str]:
    # A Python check runs with its whole folder (OAS evaluators read data files next to them).
    paths = [str(Path(c.path).parent) for c in case.checks if isinstance(c, PythonCheck)]
    paths += [f.source for f in case.environment.files if f.source is not None]
    return sorted(set(paths))


def _file_digest(base: Path, relative: str) -> str:
    """Digest of a file or folder a case names, read without following a link out of the case folder (the
    folder may have changed since load: a hostile file is an error here too, never read from the host)."""
    path = base / relative
    digest = hashlib.sha256(relative.encode())
    if not os.path.lexists(path):
        return digest.hexdigest()
    is_dir = Path(relative).parts == () or stat.S_ISDIR(safefs.stat_beneath(base, relative, what="case file").st_mode)
    if is_dir:
        for rel, data in safefs.read_tree(path, what="case folder"):
            digest.update(str(Path(relative, rel)).encode())
            digest.update(data)
    else:
        digest.update(str(Path(relative)).encode())
        digest.update(safefs.read_bytes(base, relative, what="case file", limit=MAX_SEED_FILE_BYTES))
    return digest.hexdigest()


def append_record(path: Path, record: EpisodeRecord) -> None:
    """Appends one record as a JSON line (the file is append-only; runs resume from it).

    The line is serialised before the file is opened, in one write, so a record that cannot be serialised
    never leaves an empty or partial line; text no encoding can hold (lone surrogates) becomes U+FFFD.

    Raises:
        ConfigError: The file's folder does not exist, or the file is a symlink.
    """
    line = dump_json(record) + "\n"
    check_output_path(path, flag="results file", new=False)
    try:  # O_NOFOLLOW: a link put in place since the check is refused, never appended through
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise ConfigError(f"results file {path}: cannot append: {e.strerror or e}") from None
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()


def read_records(path: Path, *, allow_truncated_tail: bool = False) -> Iterator[EpisodeRecord]:
    """Reads records; a corrupt line raises a ``ConfigError`` naming the file and line.

    Args:
        path: A results file (one JSON record per line), or one pretty-printed record (``toolemu run --out``).
        allow_truncated_tail: Skip, with a warning, a last line cut short (no newline, not valid JSON): what a
            crash in the middle of a write leaves.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not a results file (not UTF-8 at byte {e.start})") from None
    body = text.strip()
    if body.startswith("{") and "\n" in body and "\n{" not in body:
        # One record spread over several lines (``toolemu run --out`` indents it).
        try:
            yield EpisodeRecord.model_validate_json(body)
        except ValueError as e:
            first = str(e).splitlines()[0]
            raise ConfigError(f"{path}:1: not a valid episode record ({first})") from None
        return
    lines = text.split("\n")
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield EpisodeRecord.model_validate(json.loads(line))
        except ValueError as e:
            if allow_truncated_tail and lineno == len(lines) and not text.endswith("\n") and _is_cut(line):
                logger.warning("%s:%d: dropped a truncated last line (a crash mid-write?)", path, lineno)
                return
            first = str(e).splitlines()[0]
            raise ConfigError(f"{path}:{lineno}: not a valid episode record ({first})") from None


def _is_cut(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return True
    return False


def drop_truncated_tail(path: Path) -> bool:
    """Removes a last line cut short (no newline, not valid JSON) so appends start on a fresh line.

    Returns:
        Whether a line was dropped (a warning is logged).
    """
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return False
    cut = data.rfind(b"\n") + 1
    if not _is_cut(data[cut:].decode("utf-8", "replace")):
        with path.open("ab") as f:  # a complete record missing only its newline
            f.write(b"\n")
        return False
    with path.open("r+b") as f:
        f.truncate(cut)
    logger.warning("%s: dropped a truncated last line (%d bytes; a crash mid-write?)", path, len(data) - cut)
    return True
