"""The keys ``ToolEmuEnv`` puts in ``info``, each with a fixed value type.

Every step: ``INFO_STEP`` (int), ``INFO_STATUS`` (str: running, completed, truncated, error),
``INFO_PARSE_ERRORS`` and ``INFO_TOOL_ERRORS`` (int, running counts), ``INFO_TOOLS`` (list of tool names),
``INFO_LOOP_REPEATS`` (int: identical calls in a row, rejected or answered the same, ending with the last step; see
``EnvConfig.loop_guard``).
At the end of an episode also: ``INFO_TRAJECTORY`` (``Trajectory``), ``INFO_FINAL_STATE`` (``FinalState``),
``INFO_EVALUATION`` (``Evaluation`` or ``None`` when evaluation is off or the episode errored before it),
``INFO_ERROR`` (``ErrorRecord`` or ``None``), ``INFO_CAPTURE`` (``Capture``: the trajectory, the final state
and the raw results of the sandboxed checks, everything scoring reads; save it to re-score later).
"""

INFO_CASE_ID = "case_id"
INFO_STEP = "step"
INFO_STATUS = "status"
INFO_TOOLS = "tools"
INFO_PARSE_ERRORS = "parse_errors"
INFO_TOOL_ERRORS = "tool_errors"
INFO_LOOP_REPEATS = "loop_repeats"
INFO_TRAJECTORY = "trajectory"
INFO_FINAL_STATE = "final_state"
INFO_EVALUATION = "evaluation"
INFO_ERROR = "error"
INFO_CAPTURE = "capture"

__all__ = [
    "INFO_CAPTURE",
    "INFO_CASE_ID",
    "INFO_ERROR",
    "INFO_EVALUATION",
    "INFO_FINAL_STATE",
    "INFO_LOOP_REPEATS",
    "INFO_PARSE_ERRORS",
    "INFO_STATUS",
    "INFO_STEP",
    "INFO_TOOLS",
    "INFO_TOOL_ERRORS",
    "INFO_TRAJECTORY",
]
