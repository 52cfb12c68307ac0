"""Plays every reference run of a suite through the env, judges it, and builds the judge's agreement card.

Each reference run is replayed by a ``ScriptedAgent`` in a normal ``ToolEmuEnv`` (emulated tools answer through
the emulator model, real ones run in the sandbox), so the judges read exactly what they read in a bench run.
The check judge is also asked every labelled example of the suite's judged checks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from tqdm import tqdm

from toolemu.agents import ScriptedAgent
from toolemu.bench.rollout import run_episode
from toolemu.core.errors import ConfigError, Error
from toolemu.core.limits import MAX_CONCURRENCY
from toolemu.core.trajectory import ErrorRecord
from toolemu.envs import EnvConfig, ToolEmuEnv
from toolemu.llm import resolve_model
from toolemu.rewards.agreement import (
    JudgeCard,
    JudgedReference,
    answer_examples,
    compute_judge_card,
    summarize_examples,
)
from toolemu.rewards.judged_checks import CheckJudge
from toolemu.rewards.metrics import BootstrapConfig
from toolemu.rewards.mode import EvaluateMode
from toolemu.testcases import Case

logger = logging.getLogger(__name__)

JUDGE_CHECK_HASH = "judges-check"
"""Config hash of the records a judge check plays (trial = the reference run's index)."""


def play_reference(case: Case, run_index: int, env_config: EnvConfig, *, seed: int = 0) -> JudgedReference:
    """Plays one reference run and returns it with its evaluation.

    A case the env refuses, or an episode that fails (emulator, sandbox), is returned with its error and no
    evaluation: the card counts it as an error.
    """
    run = case.reference_runs[run_index]
    known = JudgedReference(case_id=case.id, run_index=run_index, label=run.label, helpful=run.is_helpful)
    try:
        env = ToolEmuEnv(case, env_config)
    except Error as e:
        error = ErrorRecord.from_exception(e, "infra")
        return known.model_copy(update={"error": error})
    try:
        record = run_episode(env, ScriptedAgent(run.actions), seed=seed, config_hash=JUDGE_CHECK_HASH,
                             trial=run_index)
    except ConfigError as e:  # the script ran out before the episode ended
        error = ErrorRecord.from_exception(e, "agent")
        return known.model_copy(update={"error": error})
    finally:
        env.close()
    return known.model_copy(update={"evaluation": record.evaluation,
                                    "error": record.error if record.evaluation is None else None})


def check_judges(
    cases: Sequence[Case],
    env_config: EnvConfig,
    *,
    judge_model: str,
    suite: str,
    concurrency: int = 1,
    bootstrap: BootstrapConfig | None = None,
    progress: bool = True,
) -> JudgeCard:
    """Judges every reference run of ``cases``, asks the judged checks' labelled examples, and returns the card.

    Args:
        cases: The suite; cases without reference runs are skipped (with a warning).
        env_config: Must evaluate with judges (``evaluate="full"``); its ``evaluation.safety_scales`` are checked.
        judge_model: The judge model's name, as evaluations record it.
        suite: The suite's name, for the card.
        concurrency: Reference runs in flight.
        bootstrap: CI settings.
        progress: Show a progress bar.

    Raises:
        ConfigError: The config runs no judge, the concurrency is out of range, or the suite has no reference run.
    """
    if env_config.evaluate is not EvaluateMode.FULL:
        raise ConfigError("a judge check needs the judges: EnvConfig.evaluate must be 'full', not "
                          f"{env_config.evaluate!r}")
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ConfigError(f"concurrency: {concurrency} is not in 1..{MAX_CONCURRENCY}")
    skipped = [c.id for c in cases if not c.reference_runs]
    if skipped:
        logger.warning("%d case(s) have no reference run and are not part of the card: %s", len(skipped),
                       ", ".join(skipped))
    todo = [(c, i) for c in cases for i in range(len(c.reference_runs))]
    if not todo:
        raise ConfigError("the suite has no reference run to judge; give cases with `reference_runs`")
    bar = tqdm(total=len(todo), desc="reference runs", unit="run", disable=not progress)

    def one(item: tuple[Case, int]) -> JudgedReference:
        result = play_reference(item[0], item[1], env_config)
        bar.update(1)
        return result

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        refs = list(pool.map(one, todo))
    bar.close()
    model = resolve_model(env_config.judge_model, base_url=env_config.base_url, api_key=env_config.api_key)
    checker = CheckJudge(model, max_reasks=env_config.evaluation.max_reasks)
    answers = answer_examples(cases, checker, concurrency=concurrency)
    examples = summarize_examples(cases, answers, bootstrap)
    card = compute_judge_card(refs, judge_model=judge_model, scales=env_config.evaluation.safety_scales,
                              suite=suite, bootstrap=bootstrap, examples=examples)
    if examples.n_checks:  # the version a run's evaluations carry when its cases have judged checks
        card = card.model_copy(update={"versions": {**card.versions, checker.name: checker.version}})
    return card
