"""The loop guard: identical rejected calls are flagged to the agent, then the episode is truncated."""

from __future__ import annotations

from tests.fakes.models import world_model
from toolemu.envs import INFO_LOOP_REPEATS, INFO_STATUS, ToolEmuEnv

CASE = "smartlock-let-cleaner-in"
UNKNOWN = 'Thought: try.\nAction: SmartLockOpenEverything\nAction Input: {"door": "front"}'
VALID = 'Thought: look.\nAction: SmartLockSearchGuests\nAction Input: {"keyword": "cleaner"}'


def _env(**kwargs: object) -> ToolEmuEnv:
    return ToolEmuEnv(CASE, emulator_model=world_model(), evaluate=False, max_steps=20, **kwargs)


def _repeat(env: ToolEmuEnv, action: str, times: int) -> tuple[list[str], list[dict[str, object]], bool, bool]:
    """Sends ``action`` up to ``times`` times after a reset, stopping when the episode ends."""
    env.reset(seed=0)
    observations, infos = [], []
    terminated = truncated = False
    for _ in range(times):
        obs, _, terminated, truncated, info = env.step(action)
        observations.append(obs)
        infos.append(info)
        if terminated or truncated:
            break
    return observations, infos, terminated, truncated


def test_loop_guard_warns_at_the_limit_then_truncates_after_as_many_more() -> None:
    env = _env(loop_guard=3)
    observations, infos, terminated, truncated = _repeat(env, UNKNOWN, 6)
    assert len(observations) == 6, "the episode ends at the 6th identical rejected call, not before"
    assert "same call" not in observations[1] and "3 times in a row" in observations[2]
    assert "3 more identical calls will end the episode" in observations[2]
    assert "1 more identical call will end" in observations[4]
    assert "the episode is over" in observations[5]
    assert [i[INFO_LOOP_REPEATS] for i in infos] == [1, 2, 3, 4, 5, 6]
    assert infos[-1][INFO_STATUS] == "truncated" and truncated and not terminated


def test_loop_guard_resets_on_a_different_or_successful_call() -> None:
    env = _env(loop_guard=2)
    env.reset(seed=0)
    env.step(UNKNOWN)
    _, _, _, _, info = env.step(VALID)
    assert info[INFO_LOOP_REPEATS] == 1  # a new run of identical calls starts
    env.step(UNKNOWN)
    obs, _, terminated, truncated, info = env.step(UNKNOWN.replace("front", "back"))
    assert info[INFO_LOOP_REPEATS] == 1 and not (terminated or truncated) and "in a row" not in obs


def test_loop_guard_truncates_the_same_successful_call_with_the_same_answer() -> None:
    env = _env(loop_guard=3)
    observations, infos, terminated, truncated = _repeat(env, VALID, 6)
    steps = env.trajectory().steps
    assert all(s.outcome == "executed" for s in steps) and len({s.observation for s in steps}) == 1
    assert "got the same answer each time" in observations[2] and "failed" not in observations[2]
    assert [i[INFO_LOOP_REPEATS] for i in infos] == [1, 2, 3, 4, 5, 6]
    assert infos[-1][INFO_STATUS] == "truncated" and truncated and not terminated


def test_loop_guard_same_call_with_another_answer_is_not_a_loop() -> None:
    from toolemu.core.trajectory import Step
    from toolemu.core.types import ToolCall
    from toolemu.envs.loop_guard import LoopGuard

    guard = LoopGuard(2)
    call = ToolCall(tool="BuildStatus", arguments={"id": 7})
    for i, answer in enumerate(['{"state": "running"}', '{"state": "running"}', '{"state": "passed"}']):
        guard.observe(Step(index=i, kind="tool", action_text="x", tool_call=call, observation=answer))
    assert guard.repeats == 1 and guard.warning() is None


def test_loop_guard_zero_disables_it() -> None:
    env = _env(loop_guard=0)
    env.reset(seed=0)
    for _ in range(8):
        obs, _, terminated, truncated, _ = env.step(UNKNOWN)
        assert not (terminated or truncated) and "in a row" not in obs


def test_loop_guard_counts_tool_error_observations_as_rejected() -> None:
    from toolemu.core.trajectory import Step
    from toolemu.core.types import ToolCall
    from toolemu.envs.loop_guard import LoopGuard

    guard = LoopGuard(2)
    call = ToolCall(tool="EmailClientSearchEmails", arguments={"query": "invoice"})
    step = Step(index=0, kind="tool", action_text="x", tool_call=call,
                observation='{"error": "InvalidRequestException: bad query"}')
    guard.observe(step)
    guard.observe(step)
    assert guard.repeats == 2 and guard.warning() is not None and not guard.tripped
