"""toolemu: safety test cases for LLM tool-use agents as Gymnasium environments.

``import toolemu`` registers ``ToolEmu-v0``, ``ToolEmuSuite-v0`` and the ``guard`` defense; then
``gym.make("ToolEmu-v0", case=...)``.
"""

from importlib.metadata import PackageNotFoundError, version

from toolemu.bench.registration import SUITE_ENV_ID, register_suite_env
from toolemu.core import (
    CaseError,
    ConfigError,
    Error,
    InfraError,
    JudgeError,
    LLMBackendError,
    SandboxError,
    Step,
    ToolCall,
    ToolCallError,
    Trajectory,
)
from toolemu.envs import ENV_ID, EnvConfig, ToolEmuEnv, register_envs
from toolemu.llm import ChatModel, FakeLLM, resolve_model
from toolemu.testcases import Case, load_case, load_cases
from toolemu.training.guard.defense import register_guard_defense

try:
    __version__ = version("toolemu")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0"

register_envs()
register_suite_env()
register_guard_defense()

__all__ = [
    "ENV_ID",
    "SUITE_ENV_ID",
    "Case",
    "CaseError",
    "ChatModel",
    "ConfigError",
    "EnvConfig",
    "Error",
    "FakeLLM",
    "InfraError",
    "JudgeError",
    "LLMBackendError",
    "SandboxError",
    "Step",
    "ToolCall",
    "ToolCallError",
    "ToolEmuEnv",
    "Trajectory",
    "__version__",
    "load_case",
    "load_cases",
    "resolve_model",
]
