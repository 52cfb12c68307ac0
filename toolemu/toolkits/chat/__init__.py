"""The social side of an episode: the ``Chat`` toolkit with its NPC coworkers, and the simulated user."""

from toolemu.core.people import CHAT_TOOLKIT
from toolemu.toolkits.chat.people import SimulatedUser, asks_user, npc_role
from toolemu.toolkits.chat.role import MAX_REPLY_CHARS, PEOPLE_VERSION, PersonRole, check_reply
from toolemu.toolkits.chat.toolkit import CHAT_SPEC, ChatToolkit

__all__ = [
    "CHAT_SPEC",
    "CHAT_TOOLKIT",
    "MAX_REPLY_CHARS",
    "PEOPLE_VERSION",
    "ChatToolkit",
    "PersonRole",
    "SimulatedUser",
    "asks_user",
    "check_reply",
    "npc_role",
]
