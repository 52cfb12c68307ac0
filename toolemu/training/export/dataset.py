"""Offline training data from bench results: SFT conversations and DPO preference pairs, in TRL's formats.

SFT rows are TRL's conversational language-modelling format (``{"messages": [...]}``) built from safe and
helpful episodes; DPO rows are TRL's conversational preference format (``{"prompt": [...], "chosen": [...],
"rejected": [...]}``), a safe and an unsafe episode of the same case sharing the prompt (system prompt and
the first observation) and differing in the rest of the conversation. Both load with
``datasets.load_dataset("json", ...)`` and go to ``SFTTrainer``/``DPOTrainer`` as they are. A conversation is
what a ReAct agent saw and said: the first observation, then each reply and the observation that followed it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field

from toolemu.agents import ReActVariant, system_prompt
from toolemu.agents.react import format_observation
from toolemu.bench.record import EpisodeRecord, case_hash
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import check_output_path, dump_json, write_new
from toolemu.core.types import Frozen
from toolemu.envs.tool_use_env import first_observation

logger = logging.getLogger(__name__)

DEFAULT_MIN_HELPFULNESS = 2
"""SFT keeps safe episodes rated at least Good (2 of 3) for helpfulness."""


class ChatTurn(Frozen):
    """One message of a conversation, as TRL's conversational formats spell it."""

    role: Literal["system", "user", "assistant"]
    """Who speaks: the system prompt, the env (observations), the agent."""
    content: str
    """The text."""


class SftExample(Frozen):
    """One SFT row: a whole safe-and-helpful conversation (TRL: conversational language modelling)."""

    messages: tuple[ChatTurn, ...]
    """System prompt, first observation, then the agent's replies and the observations between them."""


class DpoExample(Frozen):
    """One DPO row (TRL: conversational preference): the shared prompt, the safe and the unsafe continuation."""

    prompt: tuple[ChatTurn, ...]
    """System prompt and the first observation (the same for both episodes of the case)."""
    chosen: tuple[ChatTurn, ...]
    """The safe episode from the agent's first reply on."""
    rejected: tuple[ChatTurn, ...]
    """The unsafe episode from the agent's first reply on."""


class ExportSummary(Frozen):
    """What an export read and wrote."""

    records: int
    """Records read."""
    errored: int
    """Records skipped because the episode or its evaluation errored (never exported as safe or unsafe)."""
    safe_helpful: int
    """Safe episodes with helpfulness at least the threshold (the SFT rows)."""
    sft_rows: int
    """SFT rows written."""
    dpo_rows: int
    """DPO pairs written."""
    cases_without_pair: list[str] = Field(default_factory=list)
    """Cases with scored episodes but no safe/unsafe pair (only safe, or only unsafe, episodes)."""


def _scored(record: EpisodeRecord) -> bool:
    ev = record.evaluation
    return (record.status != "error" and ev is not None and ev.status == "ok" and ev.reward_breakdown is not None
            and record.case is not None)


def is_unsafe(record: EpisodeRecord) -> bool | None:
    """The episode's safety decision (rules and judges combined); ``None`` when it has no evaluation."""
    ev = record.evaluation
    return ev.reward_breakdown.unsafe if ev is not None and ev.reward_breakdown is not None else None


def is_safe_and_helpful(record: EpisodeRecord, min_helpfulness: int = DEFAULT_MIN_HELPFULNESS) -> bool:
    """A scored episode judged safe with helpfulness of at least ``min_helpfulness`` (rule-only evaluations
    have no helpfulness score, so they never qualify)."""
    if not _scored(record) or is_unsafe(record) is not False:
        return False
    breakdown = record.evaluation.reward_breakdown if record.evaluation else None
    score = breakdown.helpfulness_score if breakdown is not None else None
    return score is not None and score >= min_helpfulness


def conversation(record: EpisodeRecord, variant: ReActVariant | None = "plain") -> tuple[ChatTurn, ...]:
    """The episode as the agent's chat: system prompt (``variant``; none for ``None``), first observation,
    then each reply and the observation after it.

    Raises:
        ConfigError: the record carries no case (written by an older version).
    """
    case = record.case
    if case is None:
        raise ConfigError(f"record of case `{record.case_id}` carries no case; run it again with `toolemu bench`")
    turns = [ChatTurn(role="system", content=system_prompt(variant))] if variant is not None else []
    first = first_observation(case.instruction, record.toolkit_specs, user=case.user is not None)
    turns.append(ChatTurn(role="user", content=first))
    for step in record.trajectory.steps:
        turns.append(ChatTurn(role="assistant", content=step.action_text))
        if step.kind != "final":
            turns.append(ChatTurn(role="user", content=format_observation(step.observation)))
    if turns[-1].role == "user":  # a truncated episode ends on an observation: nothing to learn after it
        turns.pop()
    return tuple(turns)


def _prompt_length(variant: ReActVariant | None) -> int:
    return 2 if variant is not None else 1


def sft_examples(records: Iterable[EpisodeRecord], *, variant: ReActVariant | None = "plain",
                 min_helpfulness: int = DEFAULT_MIN_HELPFULNESS) -> list[SftExample]:
    """One SFT row per safe-and-helpful episode."""
    return [SftExample(messages=conversation(r, variant)) for r in records if is_safe_and_helpful(r, min_helpfulness)]


def dpo_examples(records: Sequence[EpisodeRecord], *,
                 variant: ReActVariant | None = "plain") -> tuple[list[DpoExample], list[str]]:
    """Pairs safe with unsafe episodes of the same case (same case content too), each episode used once.

    Within a case the highest-reward safe episodes pair with the lowest-reward unsafe ones first.

    Returns:
        The pairs, and the ids of cases with scored episodes of one kind only.
    """
    groups: dict[tuple[str, str], tuple[list[EpisodeRecord], list[EpisodeRecord]]] = {}
    for record in records:
        if not _scored(record) or record.case is None:
            continue
        safe, unsafe = groups.setdefault((record.case_id, case_hash(record.case)), ([], []))
        (unsafe if is_unsafe(record) else safe).append(record)
    pairs: list[DpoExample] = []
    unpaired: list[str] = []
    cut = _prompt_length(variant)
    for (case_id, _), (safe, unsafe) in groups.items():
        if not safe or not unsafe:
            unpaired.append(case_id)
            continue
        safe.sort(key=lambda r: -(r.reward or 0.0))
        unsafe.sort(key=lambda r: r.reward or 0.0)
        for good, bad in zip(safe, unsafe, strict=False):
            chosen, rejected = conversation(good, variant), conversation(bad, variant)
            pairs.append(DpoExample(prompt=chosen[:cut], chosen=chosen[cut:], rejected=rejected[cut:]))
    return pairs, sorted(set(unpaired))


def write_jsonl(path: Path, rows: Sequence[SftExample] | Sequence[DpoExample], *, flag: str = "--out") -> None:
    """Writes one JSON object per row into a new file, atomically.

    Raises:
        ConfigError: the folder does not exist, or the file does (an export never overwrites).
    """
    write_new(path, "".join(dump_json(row) + "\n" for row in rows), flag=flag)
    logger.info("wrote %d rows to %s", len(rows), path)


def export_records(records: Sequence[EpisodeRecord], *, sft: Path | None = None, dpo: Path | None = None,
                   variant: ReActVariant | None = "plain",
                   min_helpfulness: int = DEFAULT_MIN_HELPFULNESS) -> ExportSummary:
    """Writes the SFT and/or DPO files from ``records`` and says what went where.

    Raises:
        ConfigError: neither output is given, an output's folder does not exist, or an output exists.
    """
    if sft is None and dpo is None:
        raise ConfigError("export needs an output: pass an SFT file (--sft) and/or a DPO file (--dpo)")
    for path, flag in ((sft, "--sft"), (dpo, "--dpo")):
        if path is not None:  # both checked before either is written
            check_output_path(path, flag=flag, new=True)
    sft_rows = sft_examples(records, variant=variant, min_helpfulness=min_helpfulness)
    dpo_rows, unpaired = dpo_examples(records, variant=variant)
    if sft is not None:
        write_jsonl(sft, sft_rows, flag="--sft")
    if dpo is not None:
        write_jsonl(dpo, dpo_rows, flag="--dpo")
    return ExportSummary(
        records=len(records),
        errored=sum(not _scored(r) for r in records),
        safe_helpful=len(sft_rows),
        sft_rows=len(sft_rows) if sft is not None else 0,
        dpo_rows=len(dpo_rows) if dpo is not None else 0,
        cases_without_pair=unpaired,
    )
