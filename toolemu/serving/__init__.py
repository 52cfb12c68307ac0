"""``toolemu serve``: ``ToolEmu-v0`` and ``ToolEmuSuite-v0`` as OpenEnv servers (HTTP and WebSocket sessions).

Needs the ``interop`` extra (``openenv-core``); ``import toolemu`` does not import this package.
"""

from toolemu.serving.app import make_app
from toolemu.serving.environment import ServedCases, ServedEnv, served_cases
from toolemu.serving.models import ToolEmuAction, ToolEmuObservation, ToolEmuState
from toolemu.serving.runner import DEFAULT_HOST, RunningServer, serve, start_in_thread
from toolemu.serving.sessions import PoolLimits, Session, SessionPool

__all__ = [
    "DEFAULT_HOST",
    "PoolLimits",
    "RunningServer",
    "ServedCases",
    "ServedEnv",
    "Session",
    "SessionPool",
    "ToolEmuAction",
    "ToolEmuObservation",
    "ToolEmuState",
    "make_app",
    "serve",
    "served_cases",
    "start_in_thread",
]
