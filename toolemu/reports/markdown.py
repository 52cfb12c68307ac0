"""``toolemu report --out DIR``: a Markdown report with PNG figures over one or more runs, side by side.

Sections: the runs, each run's judge agreement card, headline metrics with CIs, pass@k, pass^k and over-refusal
(when the runs have repeated trials or benign twins), utility with and without attack, attack success and the
attack x defense matrix (when a run has attacked episodes), unsafe rate by risk category
and by intent (heatmaps), the judge/rule disagreements, and errors by boundary. Figures and tables come from
``toolemu.rewards.metrics``; text from episodes is untrusted and escaped before it enters the Markdown.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import write_new
from toolemu.reports import figures
from toolemu.reports.attack_section import MATRIX_FIGURE, attack_section_lines
from toolemu.reports.case_section import case_metric_lines
from toolemu.reports.runs import Run, disagreement_of, verdict_of
from toolemu.rewards.agreement import JudgeCard
from toolemu.rewards.metrics import BootstrapConfig, MetricSet, MetricsReport, MetricValue, compute_metrics
from toolemu.rewards.summary import BUILTIN_SCORERS, METRIC_LABELS, format_value

_NO_DATA = MetricValue(value=None, ci_low=None, ci_high=None, n=0)

REPORT_FILE = "report.md"
FIGURE_FILES = ("headline.png", "unsafe_by_category.png", "unsafe_by_intent.png", "errors.png", MATRIX_FIGURE)
"""The figures a report may write beside ``report.md``."""


class ReportFiles(NamedTuple):
    """What ``write_report`` wrote."""

    markdown: Path
    figures: tuple[Path, ...]


def md_text(text: str, limit: int = 240) -> str:
    """Untrusted text made safe for one Markdown table cell: one line, HTML and Markdown syntax escaped, cut.

    Examples:
        >>> md_text("<img src=x onerror=alert(1)> | *bold*\\nnext")
        '&lt;img src=x onerror=alert(1)&gt; \\\\| \\\\*bold\\\\* next'
    """
    one_line = " ".join(text.split())
    if len(one_line) > limit:
        one_line = one_line[: limit - 1] + "…"
    escaped = html.escape(one_line, quote=False)
    return re.sub(r"([\\`*_\[\]|!#])", r"\\\1", escaped)


def _cell(v: MetricValue) -> str:
    return "n/a" if v.n == 0 else f"{format_value(v)} (n={v.n})"


def _group_cell(metrics: MetricSet, metric: str) -> str:
    value: MetricValue = getattr(metrics, metric)
    if value.n > 0:
        return _cell(value)
    return f"n/a ({metrics.n_episodes} episodes, {metrics.n_errored} errored, none in the figure's population)"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def prepare_out_dir(out: Path) -> None:
    """Creates the report folder (its parent must exist); an existing folder must not hold a report yet.

    Raises:
        ConfigError: The parent is missing, ``out`` is a file, or it already holds ``report.md`` or a figure.
    """
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: is a file; give a folder for the report")
    if os.path.lexists(out / REPORT_FILE):
        raise ConfigError(f"--out {out}: already holds a report ({REPORT_FILE}); choose another folder or remove it")
    for name in FIGURE_FILES:  # figures are saved by path: one there (or a link put there) would be written through
        if os.path.lexists(out / name):
            raise ConfigError(f"--out {out}: already holds {name}; choose another folder or remove it")
    if not out.parent.is_dir():
        raise ConfigError(f"--out {out}: folder {out.parent} does not exist; create it first or choose another path")
    out.mkdir(exist_ok=True)


def card_for(run: Run, cards: Sequence[JudgeCard]) -> JudgeCard | None:
    """The card of the judge that produced ``run`` (same model, same judge versions), if one was given."""
    return next((c for c in cards if c.matches(run.judge_model, run.judge_versions)), None)


def _card_lines(run: Run, card: JudgeCard | None) -> list[str]:
    lines = [f"### {md_text(run.label)}", ""]
    if run.judge_model is None:
        return [*lines, "Rule checks only: no judge produced this run.", ""]
    if card is None:
        return [*lines, f"No judge card for judge `{md_text(run.judge_model)}` at these prompt versions. Make one "
                "with `toolemu judges check --judge-model SPEC --out RESULTS_FOLDER/NAME.judge-card.json` (the "
                "report reads `*.judge-card.json` beside each results file) or pass `--judge-card FILE`.", ""]
    lines += [f"Judge `{md_text(card.judge_model)}` on {card.n_reference_runs} reference runs of suite "
              f"`{md_text(card.suite)}` (known safe/unsafe labels); judge failures are errors, not labels.", ""]
    rows = [[s.scale, _cell(s.accuracy), _cell(s.false_safe_rate), _cell(s.false_unsafe_rate), str(s.n_errors)]
            for s in card.safety]
    lines += _table(["safety scale", "accuracy", "false-safe rate", "false-unsafe rate", "errors"], rows)
    h = card.helpfulness
    lines += ["", *_table(["helpfulness", "accuracy", "false-helpful rate", "false-unhelpful rate", "errors"],
                          [["helpful = score >= 2", _cell(h.accuracy), _cell(h.false_helpful_rate),
                            _cell(h.false_unhelpful_rate), str(h.n_errors)]]), ""]
    return lines + _judged_lines(card)


def _judged_lines(card: JudgeCard) -> list[str]:
    """The judged checks' labelled examples: per check and overall, and the examples answered wrongly."""
    j = card.judged_checks
    if j is None or not j.n_checks:
        return []
    rows = [[md_text(f"{c.case_id}/{c.check_id}"), md_text(c.question), f"{c.n_as_labelled}/{c.n_examples}",
             str(c.n_errors)] for c in j.checks]
    rows.append(["all", "", f"{j.n_as_labelled}/{j.n_examples}, accuracy {_cell(j.accuracy)}", str(j.n_errors)])
    lines = ["Judged checks: the check judge on their labelled examples.", "",
             *_table(["judged check", "question", "answered as labelled", "errors"], rows), ""]
    wrong = [w for c in j.checks for w in c.wrong]
    if wrong:
        lines += _table(["judged check", "example", "label", "answered", "evidence"],
                        [[md_text(f"{w.case_id}/{w.check_id}"), md_text(w.text, 160), w.label, str(w.answer),
                          md_text(w.evidence, 160)] for w in wrong])
        lines.append("")
    if j.without_examples:
        lines += [f"Without labelled examples: {md_text(', '.join(j.without_examples))}.", ""]
    return lines


def _breakdown(runs: Sequence[Run], reports: Sequence[MetricsReport], metric: str, by: str) -> list[str]:
    groups = [getattr(r, by) for r in reports]
    keys = sorted({k for g in groups for k in g})
    rows = [[md_text(k), *(_group_cell(g[k], metric) if k in g else "-" for g in groups)] for k in keys]
    return _table([by.removeprefix("by_").replace("_", " "), *(md_text(r.label) for r in runs)], rows)


def _disagreements(runs: Sequence[Run]) -> list[str]:
    rows = []
    for run in runs:
        for rec in run.records:
            direction = disagreement_of(rec)
            if direction is None or rec.evaluation is None:
                continue
            ev = rec.evaluation
            fired = [r.id for r in ev.rules.results if r.unsafe] if ev.rules is not None else []
            rows.append([md_text(run.label), md_text(rec.case_id), str(rec.trial), direction.replace("_", " "),
                         md_text(f"{ev.safety[0].scale}: {ev.safety[0].label}"), md_text(", ".join(fired) or "-"),
                         md_text(ev.safety[0].rationale, 160)])
    if not rows:
        return ["No episode where the safety judge and the rule checks disagree.", ""]
    header = ["run", "case", "trial", "direction", "judge", "unsafe rule checks", "judge rationale"]
    return [*_table(header, rows), ""]


def _errors(runs: Sequence[Run], reports: Sequence[MetricsReport]) -> list[str]:
    boundaries = sorted({b for r in reports for b in r.overall.errors_by_boundary})
    lines = _table(["run", "episodes", "errored", *boundaries],
                   [[md_text(run.label), str(rep.overall.n_episodes), str(rep.overall.n_errored),
                     *(str(rep.overall.errors_by_boundary.get(b, 0)) for b in boundaries)]
                    for run, rep in zip(runs, reports, strict=True)])
    failed = [(run, rec) for run in runs for rec in run.records if verdict_of(rec) == "error"]
    if failed:
        lines += ["", "Errored episodes:", ""]
        rows = []
        for run, rec in failed:
            errs = [rec.error] if rec.error is not None else []
            errs += list(rec.evaluation.errors) if rec.evaluation is not None else []
            first = errs[0] if errs else None
            rows.append([md_text(run.label), md_text(rec.case_id), str(rec.trial),
                         first.boundary if first else "-", md_text(first.type if first else "-"),
                         md_text(first.message if first else "no error record", 200)])
        lines += _table(["run", "case", "trial", "boundary", "type", "message"], rows)
    return [*lines, ""]


TOP_GAPS = 15
"""Emulator gaps a report lists (the most frequent, over all runs)."""


def _gaps(runs: Sequence[Run]) -> list[str]:
    """The requests the emulated services could not answer, most frequent first, per phase."""
    counts: dict[tuple[str, str, str, str, str], list[int]] = {}
    for run in runs:
        for record in run.records:
            for gap in record.service_gaps:
                key = (gap.phase, gap.service, gap.method, gap.path, gap.reason)
                entry = counts.setdefault(key, [0, 0])
                entry[0] += gap.count
                entry[1] += 1
    if not counts:
        return ["No episode met an emulator gap (or none had emulated services).", ""]
    top = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_GAPS]
    lines = [f"Requests the emulated services do not answer ({len(counts)} distinct; the {len(top)} most frequent). "
             "`agent`: the agent's requests; `grader`: an evaluator's (its check is an error).", ""]
    lines += _table(["phase", "service", "request", "what is missing", "requests", "episodes"],
                    [[phase, service, md_text(f"{method} {path}", 120), md_text(reason, 160), str(n), str(eps)]
                     for (phase, service, method, path, reason), (n, eps) in top])
    return [*lines, ""]


def write_report(
    runs: Sequence[Run], out: Path, *, cards: Sequence[JudgeCard] = (), bootstrap: BootstrapConfig | None = None
) -> ReportFiles:
    """Writes ``report.md`` and its PNG figures into ``out`` (see ``prepare_out_dir``).

    Raises:
        ConfigError: No run, the folder cannot hold the report, or matplotlib is missing.
    """
    if not runs:
        raise ConfigError("a report needs at least one run")
    prepare_out_dir(out)
    reports = [compute_metrics(r.records, bootstrap) for r in runs]
    labels = [r.label for r in runs]
    written: list[Path] = []
    lines = ["# toolemu report", "", "## Runs", ""]
    lines += _table(["run", "config", "agent", "judge", "episodes", "ok", "errored", "superseded", "results files"], [
        [md_text(r.label), f"`{r.config_hash}`", md_text(r.info.agent if r.info else "?"),
         md_text(r.judge_model or "none (rules only)"), str(m.overall.n_episodes),
         str(m.overall.n_episodes - m.overall.n_errored), str(m.overall.n_errored), str(r.superseded),
         md_text(", ".join(p.name for p in r.sources))]
        for r, m in zip(runs, reports, strict=True)])
    lines += ["", "Each case and trial counts once, by its latest record; `superseded` counts earlier records replaced "
              "by a later one (retried errors, edited cases).", "", "## Judge agreement cards", "",
              "How far each run's judge agrees with known labels, before reading its numbers.", ""]
    for run in runs:
        lines += _card_lines(run, card_for(run, cards))
    unused = [c for c in cards if not any(c.matches(r.judge_model, r.judge_versions) for r in runs)]
    if unused:
        lines += ["Cards read that describe no run's judge (another model or prompt version): "
                  + "; ".join(f"`{md_text(c.judge_model)}` ({md_text(', '.join(sorted(c.versions.values())))})"
                              for c in unused) + ".", ""]

    lines += ["## Headline metrics", ""]
    headline = out / "headline.png"
    shown = figures.draw_headline(labels, reports, headline)
    if shown:
        written.append(headline)
        lines += ["![headline metrics](headline.png)", ""]
    rows = [[METRIC_LABELS[m], *(_cell(getattr(rep.overall, m)) for rep in reports)] for m in shown]
    plugged = dict.fromkeys(n for rep in reports for n in rep.overall.harm_by_scorer if n not in BUILTIN_SCORERS)
    rows += [[f"scorer `{md_text(n)}`: harm share", *(_cell(rep.overall.harm_by_scorer.get(n, _NO_DATA))
                                                      for rep in reports)] for n in plugged]
    lines += [*_table(["metric", *(md_text(lab) for lab in labels)], rows), ""] if rows else ["No scored episode.", ""]

    lines += case_metric_lines(runs, [md_text(lab) for lab in labels], bootstrap)
    attack_lines, attack_figures = attack_section_lines(runs, out, md_text, bootstrap)
    lines += attack_lines
    written += attack_figures

    metric = figures.unsafe_metric(reports)
    for by, title, name in (("by_risk_category", "risk category", "unsafe_by_category.png"),
                            ("by_intent", "intent", "unsafe_by_intent.png")):
        lines += [f"## Unsafe rate by {title}", ""]
        if metric is None:
            lines += ["No scored episode.", ""]
            continue
        figures.draw_heatmap(labels, [getattr(r, by) for r in reports], metric,
                             f"{METRIC_LABELS[metric]} by {title}", out / name)
        written.append(out / name)
        lines += [f"Figure: {METRIC_LABELS[metric]} per {title} and run, with its n (CIs in the table); `n/a`: the "
                  "group's episodes all errored or are outside the figure's population (OAS label -1 for the unsafe "
                  "rate).", "", f"![{title}]({name})", "",
                  *_breakdown(runs, reports, metric, by), ""]

    lines += ["## Judge/rule disagreements", "", *_disagreements(runs), "## Errors by boundary", ""]
    if figures.draw_errors(labels, reports, out / "errors.png"):
        written.append(out / "errors.png")
        lines += ["![errors by boundary](errors.png)", ""]
    lines += _errors(runs, reports)
    lines += ["## Emulator gaps", "", *_gaps(runs)]
    cfg = reports[0].bootstrap
    lines += [f"CIs: percentile bootstrap, {cfg.resamples} resamples, {cfg.confidence:.0%}, seed {cfg.seed}. Errored "
              "episodes are counted above and excluded from every figure."]
    write_new(out / REPORT_FILE, "\n".join(lines) + "\n")
    return ReportFiles(out / REPORT_FILE, tuple(written))
