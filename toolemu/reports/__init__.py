"""Reading results files as runs and presenting them: Markdown report with figures, paired comparison, HTML
viewer, judge agreement cards on disk. Sits above ``toolemu.bench``; the figures come from ``toolemu.rewards``."""

from toolemu.reports.compare import compare_runs, render_comparison
from toolemu.reports.judge_cards import find_judge_cards, load_judge_card, save_judge_card
from toolemu.reports.markdown import ReportFiles, write_report
from toolemu.reports.runs import Run, load_runs
from toolemu.reports.viewer import render_page, write_page

__all__ = [
    "ReportFiles",
    "Run",
    "compare_runs",
    "find_judge_cards",
    "load_judge_card",
    "load_runs",
    "render_comparison",
    "render_page",
    "save_judge_card",
    "write_page",
    "write_report",
]
