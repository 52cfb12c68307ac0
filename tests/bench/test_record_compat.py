"""Records written before evaluations kept verdicts by scorer name (evaluation shape 1) still load, report and
re-score. The fixture was written by ``toolemu bench`` of that version over two emulated cases and one sandbox
case, three configs: full (toolemu scale), rules only, and full on the OAS scale with a judge that failed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.models import world_model
from toolemu.bench import read_records, rescore_file
from toolemu.bench.record import EpisodeRecord
from toolemu.rewards.evaluation import EVALUATION_SCHEMA, Evaluation, EvaluationConfig
from toolemu.rewards.judged_checks import JudgedChecksVerdict
from toolemu.rewards.metrics import compute_metrics
from toolemu.rewards.rules import RuleOutcome
from toolemu.rewards.scorer import build_scorers
from toolemu.rewards.verdict import HelpfulnessVerdict, SafetyVerdict

OLD = Path(__file__).parent.parent / "fixtures" / "records" / "schema2_evaluation1.jsonl"
FULL, RULES, FAILED = "9bb403028884", "648ec7fb7448", "e2303d625590"


def _old() -> list[EpisodeRecord]:
    return list(read_records(OLD))


def test_shape_1_evaluations_load_into_verdicts_by_scorer_name() -> None:
    raw = [json.loads(line) for line in OLD.read_text().splitlines()]
    assert all("verdicts" not in r["evaluation"] and "rules" in r["evaluation"] for r in raw)  # really shape 1
    records = {(r.case_id, r.config_hash): r for r in _old()}
    full = records["email-threaten-neighbour", FULL].evaluation
    assert full is not None and full.status == "ok" and full.schema_version == EVALUATION_SCHEMA
    assert list(full.verdicts) == ["rules", "safety_toolemu", "helpfulness", "judged_check"]
    assert isinstance(full.verdicts["safety_toolemu"], SafetyVerdict) and full.safety_for("toolemu") is not None
    assert isinstance(full.verdicts["helpfulness"], HelpfulnessVerdict) and full.helpfulness is not None
    assert isinstance(full.verdicts["judged_check"], JudgedChecksVerdict) and full.judged_checks
    assert isinstance(full.rules, RuleOutcome)
    assert full.judge_model == "openai:m" and "judge_model" not in full.versions  # the typed field now
    rules = records["smartlock-let-cleaner-in", RULES].evaluation
    assert rules is not None and rules.scope == "rules" and list(rules.verdicts) == ["rules"]
    assert rules.judge_model is None
    failed = records["email-threaten-neighbour", FAILED].evaluation
    assert failed is not None and failed.status == "error" and failed.safety == ()
    assert [e.boundary for e in failed.errors] == ["judge"] and failed.helpfulness is not None


def test_shape_1_records_write_back_as_shape_2_and_read_the_same() -> None:
    for record in _old():
        again = EpisodeRecord.model_validate_json(record.model_dump_json())
        assert again == record
        saved = json.loads(record.model_dump_json())["evaluation"]
        assert saved["schema_version"] == EVALUATION_SCHEMA and "rules" not in saved and "verdicts" in saved


def test_shape_1_records_report_as_before() -> None:
    report = compute_metrics(_old())
    overall = report.overall
    assert (overall.n_episodes, overall.n_errored) == (4, 1)
    assert overall.errors_by_boundary == {"judge": 1}
    assert overall.mean_safety.n == 2 and overall.rules_unsafe_share.n == 3
    assert set(overall.harm_by_scorer) == {"rules", "safety_toolemu", "judged_check"}


def test_shape_1_records_rescore_by_rules_and_by_judges(tmp_path: Path) -> None:
    old = {r.key: r for r in _old()}
    config = EvaluationConfig()
    by_rules = rescore_file(OLD, tmp_path / "rules.jsonl", None, config)
    for new in by_rules:
        before = next(r for r in old.values() if r.case_id == new.case_id and r.trial == new.trial
                      and r.evaluation is not None and r.evaluation.rules is not None)
        assert new.evaluation is not None and new.evaluation.rules == before.evaluation.rules  # type: ignore[union-attr]
    judge = world_model({"ToolEmuSafetyOutput": "Certain No Risk", "HelpfulnessOutput": "Good"})
    by_judges = rescore_file(OLD, tmp_path / "full.jsonl", build_scorers(config, judge, "full"), config,
                             only_config=FAILED)
    assert [r.case_id for r in by_judges] == ["email-threaten-neighbour"]
    evaluation = by_judges[0].evaluation
    assert isinstance(evaluation, Evaluation) and evaluation.status == "ok" and evaluation.judge_model == judge.name
    assert list(read_records(tmp_path / "full.jsonl")) == by_judges
