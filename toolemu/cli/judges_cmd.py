"""``toolemu judges check``: the safety and helpfulness judges on a suite's reference runs, as an agreement card."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.bench.judge_check import check_judges
from toolemu.bench.suite import select_cases
from toolemu.cli.terminal import echo
from toolemu.core.limits import MAX_CONCURRENCY
from toolemu.core.outfiles import check_output_path
from toolemu.envs import EnvConfig
from toolemu.llm import describe_model, resolve_model
from toolemu.reports import save_judge_card
from toolemu.reports.judge_cards import CARD_SUFFIX
from toolemu.rewards.agreement import JudgeCard
from toolemu.rewards.evaluation import EvaluationConfig
from toolemu.rewards.summary import format_value


@click.group("judges")
def judges() -> None:
    """How far the judges can be trusted."""


@judges.command("check")
@click.option("--judge-model", default=None, help="Judge model spec (default: OpenAI-compatible if a key or base "
              "URL is set, else the embedded local model).")
@click.option("--emulator-model", default=None,
              help="Plays the emulated tools of the reference runs (default as above).")
@click.option("--suite", default="builtin", show_default=True,
              help="builtin, emulated, real, or a folder/file of cases.")
@click.option("--case", "case_ids", multiple=True, help="Only these case ids (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many cases.")
@click.option("--safety-scale", "scales", multiple=True, type=click.Choice(["toolemu", "oas"]),
              help="Safety judges to check (repeatable; default both).")
@click.option("--concurrency", type=click.IntRange(1, MAX_CONCURRENCY), default=1, show_default=True)
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint.")
@click.option("--api-key", default=None, help="API key for that endpoint (else $OPENAI_API_KEY).")
@click.option("--cache-dir", type=click.Path(), default=None, help="Cache model responses on disk here.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help=f"Write the card as JSON (new file; name it *{CARD_SUFFIX} beside a results file for reports).")
def check_command(judge_model: str | None, emulator_model: str | None, suite: str, case_ids: tuple[str, ...],
                  limit: int | None, scales: tuple[str, ...], concurrency: int, base_url: str | None,
                  api_key: str | None, cache_dir: str | None, out: Path | None) -> None:
    """Judge every reference run of a suite (known safe/unsafe label): accuracy, false-safe and false-unsafe
    rates with CIs and n; and every labelled example of its judged checks. Judge failures count as errors."""
    if out is not None:
        check_output_path(out)
    cases = select_cases(suite, case_ids, limit)
    cache = Path(cache_dir) if cache_dir else None
    judge = resolve_model(judge_model, base_url=base_url, api_key=api_key, cache_dir=cache)
    emulator = resolve_model(emulator_model, base_url=base_url, api_key=api_key, cache_dir=cache)
    echo(f"   judges: {describe_model(judge)}\n emulator: {describe_model(emulator)}", err=True)
    config = EnvConfig(emulator_model=emulator, judge_model=judge, npc_model=emulator,
                       evaluation=EvaluationConfig(safety_scales=scales or ("toolemu", "oas")))  # type: ignore[arg-type]
    card = check_judges(cases, config, judge_model=judge.name, suite=suite, concurrency=concurrency)
    echo(render_card(card))
    if out is not None:
        save_judge_card(card, out)
        echo(f"wrote {out}", err=True)


def render_card(card: JudgeCard) -> str:
    """The card as text."""
    lines = [f"judge {card.judge_model} on {card.n_reference_runs} reference runs of {card.suite}"]
    for s in card.safety:
        lines.append(f"safety ({s.scale}): accuracy {format_value(s.accuracy)} n={s.accuracy.n}  "
                     f"false-safe {format_value(s.false_safe_rate)} n={s.false_safe_rate.n}  "
                     f"false-unsafe {format_value(s.false_unsafe_rate)} n={s.false_unsafe_rate.n}  errors {s.n_errors}")
    h = card.helpfulness
    lines.append(f"helpfulness: accuracy {format_value(h.accuracy)} n={h.accuracy.n}  "
                 f"false-helpful {format_value(h.false_helpful_rate)} n={h.false_helpful_rate.n}  "
                 f"false-unhelpful {format_value(h.false_unhelpful_rate)} n={h.false_unhelpful_rate.n}  "
                 f"errors {h.n_errors}")
    lines += judged_lines(card)
    if card.errors_by_boundary:
        lines.append("error records by boundary: " + ", ".join(f"{k} {v}" for k, v in card.errors_by_boundary.items()))
    level = f"{card.bootstrap.confidence:.0%}"
    lines.append(f"CI: {level} percentile bootstrap, {card.bootstrap.resamples} resamples, seed {card.bootstrap.seed}")
    return "\n".join(lines)


def judged_lines(card: JudgeCard) -> list[str]:
    """The judged checks' labelled examples: overall, per check, and each example answered against its label."""
    j = card.judged_checks
    if j is None or not j.n_checks:
        return ["judged checks: none in this suite"]
    lines = [f"judged checks: {j.n_as_labelled}/{j.n_examples} labelled examples answered as labelled "
             f"(accuracy {format_value(j.accuracy)} n={j.accuracy.n})  errors {j.n_errors}  checks {j.n_checks}"]
    for c in j.checks:
        lines.append(f"  {c.case_id}/{c.check_id}: {c.n_as_labelled}/{c.n_examples} as labelled  errors {c.n_errors}")
        lines += [f"    wrong: example {w.index} labelled {w.label}, answered {w.answer}: {_short(w.text)!r}"
                  for w in c.wrong]
        lines += [f"    error: example {e.index}: {_short(e.error or '', 160)}" for e in c.errored]
    if j.without_examples:
        lines.append(f"  without labelled examples: {', '.join(j.without_examples)}")
    return lines


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
