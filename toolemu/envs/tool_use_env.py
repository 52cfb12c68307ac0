"""``ToolEmuEnv``: one safety test case as a Gymnasium environment (docs/architecture.md §2).

It composes a case, a ``ToolBox`` (emulated and/or sandboxed toolkits) and the evaluators. Text in, text out;
the reward arrives at the end of the episode. Infra failures end the episode with status ``error`` and a NaN
reward: an error is never a score.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any, SupportsFloat

import gymnasium as gym
from pydantic import ValidationError

from toolemu.core.capture import Capture
from toolemu.core.errors import (
    HOSTILE_INPUT_FAULTS,
    ActionParseError,
    CaseError,
    ConfigError,
    EnvStateError,
    InfraError,
    NotRegisteredError,
    SandboxError,
    ToolCallError,
)
from toolemu.core.react import KEYWORDS
from toolemu.core.render import render_tool_specs
from toolemu.core.trajectory import Boundary, EpisodeStatus, ErrorRecord, NpcMessage, Step, Trajectory
from toolemu.core.types import ToolkitSpec
from toolemu.core.untrusted import scrub_surrogates
from toolemu.envs.action import action_text, parse_action
from toolemu.envs.capture import capture_episode
from toolemu.envs.config import EnvConfig, case_toolkit_specs, effective_evaluate
from toolemu.envs.info import (
    INFO_CAPTURE,
    INFO_CASE_ID,
    INFO_ERROR,
    INFO_EVALUATION,
    INFO_FINAL_STATE,
    INFO_LOOP_REPEATS,
    INFO_PARSE_ERRORS,
    INFO_STATUS,
    INFO_STEP,
    INFO_TOOL_ERRORS,
    INFO_TOOLS,
    INFO_TRAJECTORY,
)
from toolemu.envs.injection import described_specs, splice_result
from toolemu.envs.loop_guard import LoopGuard
from toolemu.envs.models import EpisodeModels
from toolemu.envs.spaces import UnicodeText
from toolemu.rewards.evaluation import Evaluation, score_episode
from toolemu.rewards.mode import EvaluateMode
from toolemu.testcases import Case, load_case
from toolemu.testcases.checker import check_case_for_env, check_case_tools
from toolemu.testcases.openhands import bounded_log
from toolemu.toolkits import ToolBox
from toolemu.toolkits.base import EpisodeSetup
from toolemu.toolkits.chat import PEOPLE_VERSION, SimulatedUser, asks_user
from toolemu.toolkits.emulated import EMULATOR_VERSION
from toolemu.toolkits.plan import plan_toolkits

logger = logging.getLogger(__name__)

ENV_VERSION = "ToolEmu-v0"
DEFAULT_MAX_STEPS_EMULATED = 15
DEFAULT_MAX_STEPS_REAL = 30


@cache
def _first_observation_template() -> str:
    return resources.files("toolemu.envs").joinpath("prompts", "first_observation.md").read_text(encoding="utf-8")


@cache
def _user_note() -> str:
    return resources.files("toolemu.envs").joinpath("prompts", "user_available.md").read_text(encoding="utf-8").strip()


def first_observation(instruction: str, specs: Sequence[ToolkitSpec], *, user: bool = False) -> str:
    """An episode's first observation: the tool list and the user's instruction, and with ``user`` the note
    that the user can be asked (what ``reset`` returns; exports rebuild prompts with it)."""
    obs = _first_observation_template().format(tools=render_tool_specs(specs), instruction=instruction, **KEYWORDS)
    return obs + "\n\n" + _user_note() if user else obs


def with_overrides(base: EnvConfig, overrides: dict[str, object]) -> EnvConfig:
    """Applies keyword overrides; an unknown or invalid one is a one-line ``ConfigError``."""
    if not overrides:
        return base
    unknown = sorted(set(overrides) - set(EnvConfig.model_fields))
    if unknown:
        raise NotRegisteredError("ToolEmuEnv option", unknown[0], EnvConfig.model_fields)
    fields = {name: getattr(base, name) for name in EnvConfig.model_fields}
    try:
        return EnvConfig.model_validate(fields | overrides)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        msg = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"ToolEmuEnv option `{where}`: {msg} (got {first.get('input')!r:.60})") from None


class ToolEmuEnv(gym.Env[str, str]):
    """A safety test case as a POMDP over text.

    Args:
        case: A built-in case id, a path to a case file, a ``Case``, or a ToolEmu case dict.
        config: An ``EnvConfig``; keyword arguments override its fields (so ``gym.make`` kwargs work).
        **overrides: ``EnvConfig`` fields.

    Observations and actions are strings. ``reset`` returns the user instruction with the tool list;
    ``step`` parses a ReAct or JSON tool call and returns the tool's output.
    """

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 (Gymnasium's convention)

    def __init__(self, case: object, config: EnvConfig | None = None, render_mode: str | None = None,
                 **overrides: object) -> None:
        self.case: Case = load_case(case)  # type: ignore[arg-type]
        base = config or EnvConfig()
        self.config = with_overrides(base, overrides)
        self.render_mode = render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        specs = case_toolkit_specs(self.case, self.config)
        # Gymnasium checks an env when it is made; so do we the case: one that cannot be graded, or names
        # what it does not have, is a one-line CaseError here, never a score at the end of an episode.
        self.evaluate = effective_evaluate(self.config.evaluate, self.case)
        """What scores this env's episodes (``EnvConfig.evaluate`` with ``"auto"`` resolved for the case)."""
        check_case_for_env(self.case, evaluate=self.evaluate)
        needs_emulator = plan_toolkits(self.case.toolkits, specs, self.config.real_toolkits).needs_emulator
        wants_user = self.case.user is not None and self.config.simulated_user
        self.models = EpisodeModels.from_config(self.config, needs_emulator=needs_emulator,
                                                needs_npc=bool(self.case.npcs), needs_user=wants_user,
                                                mode=self.evaluate)
        self.toolbox = ToolBox.build(
            self.case.toolkits,
            specs=specs,
            emulator_model=self.models.emulator,
            emulator_mode=self.config.emulator_mode,
            real=self.config.real_toolkits,
            sandbox_config=self.config.sandbox,
            npc_model=self.models.npc,
        )
        try:
            check_case_tools(self.case, {spec.toolkit: spec for spec in self.toolbox.specs})
        except BaseException:
            self.toolbox.close()
            raise
        has_real = self.toolbox.sandbox is not None
        self.max_steps = self.config.max_steps or self.case.max_steps or (
            DEFAULT_MAX_STEPS_REAL if has_real else DEFAULT_MAX_STEPS_EMULATED
        )
        self._steps: list[Step] = []
        self._status: EpisodeStatus | None = None
        self._error: ErrorRecord | None = None
        self._parse_errors = 0
        self._tool_errors = 0
        self._seed: int | None = None
        self._npc_messages: list[NpcMessage] = []
        self._openhands_log: str | None = None
        self._loop_guard = LoopGuard(self.config.loop_guard)
        self._user: SimulatedUser | None = None

    # -- Gymnasium API -------------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Starts a fresh episode and returns the instruction with the tool list.

        Raises:
            InfraError: the toolkits or the sandbox could not be set up (a ``SandboxError`` when seeding the
                world from the case's files raised on the host); the env's ``trajectory()`` then records it
                with status ``error``, and ``step`` refuses to run until the next ``reset``.
            CaseError: a file the case names is gone or changed since the env was built; recorded likewise.
        """
        super().reset(seed=seed)
        if seed is not None:
            self._seed = seed
        self._steps, self._status, self._error = [], "running", None
        self._npc_messages = []
        self._openhands_log = None
        self._parse_errors = self._tool_errors = 0
        self._loop_guard.reset()
        case = self.case
        setup = EpisodeSetup(
            case_id=case.id,
            emulation=case.emulation_context(),
            environment=case.environment,
            seed=self._seed,
            npcs=case.npcs,
            services=case.services,
        )
        try:
            self.toolbox.reset(setup)
        except (InfraError, CaseError) as e:  # a CaseError: the case folder changed since the env was built
            failed = e.boundary if isinstance(e, InfraError) else "sandbox"
            boundary = failed if failed in ("llm", "emulator", "sandbox", "toolkit", "npc") else "infra"
            self._status = "error"
            self._error = ErrorRecord.from_exception(e, boundary, "reset")  # type: ignore[arg-type]
            raise
        except HOSTILE_INPUT_FAULTS as e:  # seeding the world from the case's files failed on the host
            self._status, self._error = "error", ErrorRecord.from_exception(e, "sandbox", "reset")
            raise SandboxError(f"case `{case.id}`: reset failed: {type(e).__name__}: {e}") from e
        self._user = None
        if case.user is not None and self.models.user is not None:
            self._user = SimulatedUser(case.user, case.instruction, self.models.user, seed=self._seed)
        # An attack in the tool descriptions is shown in the agent's tool list only (the emulator and the
        # judges keep the toolkits' own specs).
        shown = described_specs(case.attack, self.toolbox.specs)
        obs = first_observation(case.instruction, shown, user=self._user is not None)
        return obs, self._info()

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Runs one agent action.

        A non-string, over-long or unparseable action is an error observation for the agent, counted in
        ``info["parse_errors"]``; it uses a step.

        Returns:
            ``(observation, reward, terminated, truncated, info)``. ``reward`` is 0 until the episode ends,
            then the evaluation's reward; NaN when the episode ended in an infra error.

        Raises:
            EnvStateError: called before ``reset`` or after the episode ended.
        """
        if self._status is None:
            raise EnvStateError("step() called before reset(); call env.reset() first")
        if self._status != "running":
            raise EnvStateError(f"step() called after the episode ended ({self._status}); call env.reset()")
        index = len(self._steps)
        raw, action = action, action_text(action)  # lone surrogates from a model would crash every later write
        try:
            parsed = parse_action(raw)
        except ToolCallError as e:
            self._parse_errors += 1
            self._steps.append(Step(index=index, kind="parse_error", action_text=action, observation=str(e)))
            return self._after_step(str(e))
        if parsed.kind == "final" and self._user is not None and asks_user(parsed.final_answer):
            return self._ask_user(Step(index=index, kind="ask_user", action_text=action, thought=parsed.thought,
                                       final_answer=parsed.final_answer))
        if parsed.kind == "final":
            self._steps.append(Step(index=index, kind="final", action_text=action, thought=parsed.thought,
                                    final_answer=parsed.final_answer))
            return self._finish("completed", "")
        call = parsed.tool_call
        if call is None:  # parse_action returns a call for every non-final action
            raise ActionParseError(f"no tool call parsed from {action[:80]!r}")
        try:
            self.toolbox.validate(call)
        except ToolCallError as e:  # unknown tool or bad arguments: refused before it could run
            return self._tool_error(Step(index=index, kind="tool_error", action_text=action, thought=parsed.thought,
                                         tool_call=call, outcome="rejected", observation=f"Error: {e}"))
        try:
            result = self.toolbox.call(call, self._steps)
        except ToolCallError as e:  # the tool ran and failed; the agent sees why
            return self._tool_error(Step(index=index, kind="tool_error", action_text=action, thought=parsed.thought,
                                         tool_call=call, outcome="errored", observation=f"Error: {e}"))
        except InfraError as e:
            boundary = e.boundary if e.boundary in ("llm", "emulator", "sandbox", "toolkit", "npc") else "infra"
            self._steps.append(Step(index=index, kind="tool", action_text=action, thought=parsed.thought,
                                    tool_call=call, outcome="errored", observation=""))
            return self._finish("error", "", ErrorRecord.from_exception(e, boundary))  # type: ignore[arg-type]
        except HOSTILE_INPUT_FAULTS as e:  # the tool's host side broke (a file helper, a copy): not the agent's
            logger.warning("episode %s: tool %s raised %s: %s", self.case.id, call.tool, type(e).__name__, e)
            self._steps.append(Step(index=index, kind="tool", action_text=action, thought=parsed.thought,
                                    tool_call=call, outcome="errored", observation=""))
            return self._finish("error", "", ErrorRecord.from_exception(e, "toolkit", f"tool call {call.tool}"))
        observation = self._cut(splice_result(self.case.attack, call.tool, result.observation))
        self._steps.append(Step(index=index, kind="tool", action_text=action, thought=parsed.thought,
                                tool_call=call, outcome="executed", observation=observation,
                                hidden_notes=result.hidden_notes, screenshot=result.screenshot))
        return self._after_step(observation)

    def record_npc_messages(self, messages: Sequence[NpcMessage]) -> None:
        """Adds NPC messages exchanged outside the env's tools (a replayed log's recorded conversation).

        They join the episode's final state and the OAS evaluators' chat history, in order.

        Raises:
            EnvStateError: no episode is running.
        """
        if self._status != "running":
            raise EnvStateError(f"record_npc_messages() needs a running episode (status {self._status})")
        self._npc_messages.extend(messages)

    def record_openhands_log(self, text: str) -> None:
        """Sets the OpenHands event log (its JSON text) of the foreign run this episode replays: OAS evaluators
        read it, bounded, instead of the log written from the trajectory, as OAS graded that run; the capture
        keeps it.

        Raises:
            EnvStateError: no episode is running.
        """
        if self._status != "running":
            raise EnvStateError(f"record_openhands_log() needs a running episode (status {self._status})")
        self._openhands_log = text

    def abort(self, error: ErrorRecord) -> dict[str, Any]:
        """Ends the running episode in error (the agent failed outside the env): stops the sandbox's processes.

        Returns:
            The terminal ``info`` (status ``error``, no evaluation, NaN reward).

        Raises:
            EnvStateError: no episode is running.
        """
        if self._status != "running":
            raise EnvStateError(f"abort() needs a running episode (status {self._status}); call env.reset()")
        return self._finish("error", "", error)[4]

    def truncate(self) -> dict[str, Any]:
        """Ends the running episode without a final answer (an agent that stopped or disconnected, such as an
        MCP client that closed its session): captured and scored like an episode out of steps, status
        ``truncated``.

        Returns:
            The terminal ``info``.

        Raises:
            EnvStateError: no episode is running.
        """
        if self._status != "running":
            raise EnvStateError(f"truncate() needs a running episode (status {self._status}); call env.reset()")
        return self._finish("truncated", "")[4]

    def render(self) -> str | None:
        """Returns the trajectory so far as text (``render_mode="ansi"``)."""
        from toolemu.core.render import render_steps

        return render_steps(self._steps, include_thoughts=True)

    def close(self) -> None:
        """Releases the sandbox and toolkits."""
        self.toolbox.close()
        super().close()

    # -- internals -----------------------------------------------------------------------------------------

    def _ask_user(self, step: Step) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """The agent ended its turn with a question: the simulated user answers, and the episode goes on."""
        if self._user is None:
            raise EnvStateError("no simulated user in this episode")
        try:
            reply = self._user.answer(step.final_answer or "")
        except InfraError as e:
            self._steps.append(step)
            boundary: Boundary = "llm" if e.boundary == "llm" else "npc"
            return self._finish("error", "", ErrorRecord.from_exception(e, boundary))
        except HOSTILE_INPUT_FAULTS as e:  # the simulated user's model or prompt broke on the question
            self._steps.append(step)
            return self._finish("error", "", ErrorRecord.from_exception(e, "npc", "simulated user"))
        observation = f"User: {self._cut(reply)}"
        self._steps.append(step.model_copy(update={"observation": observation}))
        return self._after_step(observation)

    def _tool_error(self, step: Step) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        self._tool_errors += 1
        self._steps.append(step)
        return self._after_step(step.observation)

    def _cut(self, text: str) -> str:
        text = scrub_surrogates(text)
        limit = self.config.max_observation_chars
        if len(text) <= limit:
            return text
        return text[:limit] + f"\n[... output truncated: {len(text) - limit} more characters ...]"

    def _after_step(self, observation: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        guard = self._loop_guard
        guard.observe(self._steps[-1])
        warning = guard.warning()
        if warning is not None:
            observation = f"{observation}\n{warning}"
        if guard.tripped:
            logger.info("episode %s: loop guard after %d identical calls", self.case.id, guard.repeats)
            return self._finish("truncated", observation)
        if len(self._steps) >= self.max_steps:
            return self._finish("truncated", observation)
        return observation, 0.0, False, False, self._info()

    def _info(self) -> dict[str, Any]:
        return {
            INFO_CASE_ID: self.case.id,
            INFO_STEP: len(self._steps),
            INFO_STATUS: self._status,
            INFO_TOOLS: self.toolbox.tool_names(),
            INFO_PARSE_ERRORS: self._parse_errors,
            INFO_TOOL_ERRORS: self._tool_errors,
            INFO_LOOP_REPEATS: self._loop_guard.repeats,
        }

    def trajectory(self, error: ErrorRecord | None = None) -> Trajectory:
        """The episode so far as a ``Trajectory`` (with ``error``, or the error it ended with)."""
        error = error or self._error
        final = next((s.final_answer for s in reversed(self._steps) if s.kind == "final"), None)
        return Trajectory(
            case_id=self.case.id,
            instruction=self.case.instruction,
            toolkits=self.case.toolkits,
            steps=tuple(self._steps),
            final_answer=final,
            status="error" if error is not None else (self._status or "running"),
            error=error,
            versions={"env": ENV_VERSION, "emulator": EMULATOR_VERSION, **self._people_version(),
                      **self.models.versions()},
        )

    def _people_version(self) -> dict[str, str]:
        return {"people": PEOPLE_VERSION} if self.case.npcs or self._user is not None else {}

    def _finish(self, status: EpisodeStatus, observation: str,
                error: ErrorRecord | None = None) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        self._status = status
        original = bounded_log(self._openhands_log) if self._openhands_log is not None else None
        capture = Capture(trajectory=self.trajectory(error), toolkit_specs=self.toolbox.specs,
                          openhands_log=original)
        if error is None:
            try:
                capture = capture_episode(self.case, self.toolbox, capture.trajectory,
                                          run_checks=self.evaluate is not EvaluateMode.OFF,
                                          timeout_s=self.config.check_timeout_s,
                                          messages=[*self._npc_messages, *self.toolbox.messages()],
                                          openhands_log=original)
            except InfraError as e:
                error = ErrorRecord.from_exception(e, "sandbox")
            except HOSTILE_INPUT_FAULTS as e:  # what the agent left broke the snapshot (a deep tree, a bad file)
                logger.warning("episode %s: capture raised %s: %s", self.case.id, type(e).__name__, e)
                error = ErrorRecord.from_exception(e, "sandbox", "episode capture")
        if error is not None:
            self.toolbox.stop()  # an errored episode leaves no process running either
            self._status, self._error = "error", error
            capture = capture.model_copy(update={"trajectory": self.trajectory(error)})
        evaluation = None
        if error is None:
            try:
                evaluation = self._score(capture)
            except HOSTILE_INPUT_FAULTS as e:  # a captured value no score can hold (a final_score of 10**400)
                logger.warning("episode %s: scoring raised %s: %s", self.case.id, type(e).__name__, e)
                error = ErrorRecord.from_exception(e, "check", "scoring")
                self.toolbox.stop()
                self._status, self._error = "error", error
                capture = capture.model_copy(update={"trajectory": self.trajectory(error)})
        # NaN, not 0: an unevaluated or errored episode has no reward, and NaN cannot pass for one.
        reward = math.nan
        if evaluation is not None and evaluation.reward is not None:
            reward = evaluation.reward
        info = self._info() | {
            INFO_TRAJECTORY: capture.trajectory,
            INFO_FINAL_STATE: capture.final_state,
            INFO_CAPTURE: capture,
            INFO_EVALUATION: evaluation,
            INFO_ERROR: error,
        }
        terminated = status == "completed" and error is None
        truncated = not terminated
        logger.info("episode %s ended: %s reward=%s", self.case.id, self._status, reward)
        return observation, reward, terminated, truncated, info

    def _score(self, capture: Capture) -> Evaluation | None:
        """Scores the capture with the env's scorers (``evaluate``: rule checks alone, rules and judges, or not
        at all)."""
        if self.models.scorers is None:
            return None
        return score_episode(self.case, capture, self.models.scorers, self.config.evaluation.reward)
