"""Replays a case's reference runs through ``ToolEmuEnv`` and checks that its rule checks classify each as labelled.

This is what ``toolemu cases validate`` runs on every case. No language model is involved: real toolkits run in
the sandbox; an emulated tool answers with the smallest reply its output schema allows (rule checks read the
agent's calls, never the emulated results); NPC coworkers answer "Ok, thanks." and the simulated user "Please go
ahead.". One env (one sandbox) serves all the runs of a case, reset between them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from pydantic import JsonValue

from toolemu.core.errors import Error
from toolemu.core.types import Message, ToolCall
from toolemu.envs import ToolEmuEnv
from toolemu.envs.config import EnvConfig
from toolemu.envs.info import INFO_ERROR, INFO_EVALUATION, INFO_TRAJECTORY
from toolemu.llm import FakeLLM, SamplingParams
from toolemu.rewards.evaluation import Evaluation
from toolemu.testcases.schema import Case, ReferenceRun

NPC_REPLY = "Ok, thanks."
USER_REPLY = "Please go ahead."
_USER_PROMPT_MARK = "gave an AI assistant a task"  # the simulated user's system prompt says so; NPCs' do not
_BAD_STEPS = ("parse_error", "tool_error")


class RunVerdict(NamedTuple):
    """One replayed reference run: its label, what the checks said, and the problem when they disagree."""

    case_id: str
    run: int
    """The run's position in ``reference_runs``."""
    label: str
    unsafe: bool | None
    """The rule checks' verdict; ``None`` when the replay or a check errored."""
    problem: str | None
    """Why this run fails validation (misclassified, errored, a step the env rejected); ``None`` when it passes."""
    seconds: float
    fired: tuple[str, ...] = ()
    """Ids of the checks that found harm in this run."""
    undecided: bool = False
    """The rules found no harm and the case has judged checks: the judge decides this run, not the replay."""
    probe: bool = False
    """A probe run (``Case.probe_runs``; ``run`` counts from the first probe) rather than a reference run."""

    @property
    def ok(self) -> bool:
        """Whether the checks classified the run as labelled, without errors."""
        return self.problem is None


def minimal_instance(schema: Mapping[str, JsonValue]) -> JsonValue:
    """The smallest value a JSON Schema (as the emulator's reply schemas are written) accepts.

    Examples:
        >>> minimal_instance({"type": "object", "properties": {"a": {"type": "integer"},
        ...                   "b": {"type": "string"}}, "required": ["a"]})
        {'a': 0}
        >>> minimal_instance({"anyOf": [{"type": "array"}, {"type": "null"}]})
        []
    """
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return schema["enum"][0]
    if "anyOf" in schema and isinstance(schema["anyOf"], list) and schema["anyOf"]:
        first = schema["anyOf"][0]
        return minimal_instance(first) if isinstance(first, dict) else None
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = kind[0] if kind else None
    if kind == "object":
        props = schema.get("properties")
        required = schema.get("required")
        if not isinstance(props, dict) or not isinstance(required, list):
            return {}
        return {str(k): minimal_instance(v) if isinstance(v, dict) else None for k, v in props.items() if k in required}
    scalars: dict[str, JsonValue] = {"array": [], "string": "", "integer": 0, "number": 0, "boolean": True}
    return scalars.get(str(kind))


def _minimal_reply(messages: Sequence[Message], params: SamplingParams) -> str:
    import json

    if params.json_schema is None:
        return "{}"
    return json.dumps(minimal_instance(params.json_schema))


def _people_reply(messages: Sequence[Message], params: SamplingParams) -> str:
    return USER_REPLY if messages and _USER_PROMPT_MARK in messages[0].content else NPC_REPLY


def replay_config(base: EnvConfig | None = None, *, has_checks: bool = True) -> EnvConfig:
    """The env settings of a replay: rule checks only (none for a case without checks), the schema-minimal
    emulator, fixed people replies."""
    fields = dict(base or EnvConfig()) | {
        "evaluate": "rules" if has_checks else False,
        "emulator_model": FakeLLM.from_function(_minimal_reply, name="minimal-emulator"),
        "npc_model": FakeLLM.from_function(_people_reply, name="fixed-people"),
        "user_model": None,
    }
    return EnvConfig.model_validate(fields)


def _text(action: str | ToolCall) -> str:
    return action.model_dump_json() if isinstance(action, ToolCall) else action


def _play(env: ToolEmuEnv, case: Case, index: int, run: ReferenceRun, probe: bool = False) -> RunVerdict:
    start = time.perf_counter()
    fired: list[str] = []

    def verdict(unsafe: bool | None, problem: str | None, undecided: bool = False) -> RunVerdict:
        return RunVerdict(case.id, index, run.label, unsafe, problem, time.perf_counter() - start,
                          tuple(fired), undecided, probe)

    env.reset(seed=0)
    info: dict[str, object] = {}
    done = False
    for n, action in enumerate(run.actions):
        if done:
            return verdict(None, f"the episode ended at action {n - 1} of {len(run.actions)}")
        _, _, terminated, truncated, info = env.step(_text(action))
        done = terminated or truncated
    if info.get(INFO_ERROR) is not None:
        return verdict(None, f"the episode errored: {info[INFO_ERROR]}")
    if not done:
        return verdict(None, "the run does not end with a final answer")
    trajectory = info.get(INFO_TRAJECTORY)
    bad = [s for s in getattr(trajectory, "steps", ()) if s.kind in _BAD_STEPS]
    if bad:
        return verdict(None, f"step {bad[0].index} was rejected ({bad[0].kind}): {bad[0].observation[:160]}")
    if not case.checks:
        unsafe = False  # nothing to fire: every run reads as safe, so an unsafe-labelled run fails below
    else:
        evaluation = info.get(INFO_EVALUATION)
        if not isinstance(evaluation, Evaluation) or evaluation.rules is None:
            return verdict(None, "no rule evaluation came back")
        rules = evaluation.rules
        fired += [r.id for r in rules.results if r.unsafe]
        if rules.undecided and not rules.errored:
            return verdict(None, None, undecided=True)
        if rules.errored or rules.unsafe is None:
            errors = "; ".join(f"{r.id}: {r.error}" for r in rules.results if r.error)
            return verdict(None, f"a check errored: {errors or rules.results}")
        unsafe = rules.unsafe
    if unsafe is not (run.label == "unsafe"):
        return verdict(unsafe, f"labelled {run.label} but the checks say {'unsafe' if unsafe else 'safe'}"
                               f" (fired: {', '.join(fired) or 'none'})")
    return verdict(unsafe, None)


def replay_reference_runs(case: Case, config: EnvConfig | None = None, *, probes: bool = True) -> list[RunVerdict]:
    """Replays every reference run of ``case`` (and, with ``probes``, its probe runs) and returns one verdict
    per run.

    Raises:
        Error: the env could not be made (a malformed case, no sandbox): nothing could be replayed.
    """
    runs = [(i, run, False) for i, run in enumerate(case.reference_runs)]
    if probes:
        runs += [(i, run, True) for i, run in enumerate(case.probe_runs)]
    if not runs:
        return []
    env = ToolEmuEnv(case, replay_config(config, has_checks=bool(case.checks)))
    try:
        out: list[RunVerdict] = []
        for i, run, probe in runs:
            try:
                out.append(_play(env, case, i, run, probe))
            except Error as e:
                out.append(RunVerdict(case.id, i, run.label, None, f"replay failed: {e}", 0.0, probe=probe))
        return out
    finally:
        env.close()


def dead_checks(case: Case, verdicts: Sequence[RunVerdict]) -> list[str]:
    """Ids of the case's rule checks (not judged ones) that fire on no unsafe run: they test nothing."""
    from toolemu.rewards.rules import check_id

    fired = {cid for v in verdicts if v.label == "unsafe" for cid in v.fired}
    return [check_id(c, i) for i, c in enumerate(case.checks)
            if c.kind != "judged" and check_id(c, i) not in fired]
