"""The ``Chat`` toolkit: the agent messages NPC coworkers (one by name, or everyone) and lists who is there.

Each NPC is its own LM role with its own memory. The replies are the observation; every message, both ways, is
recorded in order for the final state, so ``message_sent`` checks read what was really said.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from toolemu.core.errors import EnvStateError, ToolCallError
from toolemu.core.limits import MAX_BROADCAST_REPLIES
from toolemu.core.people import CHAT_TOOLKIT, NpcSpec
from toolemu.core.trajectory import NpcMessage, Step
from toolemu.core.types import ParamSpec, ReturnSpec, ToolCall, ToolkitSpec, ToolSpec
from toolemu.llm.backend import ChatModel
from toolemu.toolkits.base import EpisodeSetup, ToolResult
from toolemu.toolkits.chat.people import npc_role
from toolemu.toolkits.chat.role import PersonRole

_REPLIES = ReturnSpec(name="replies", type="array",
                      description='One object per person who answered: {"from": name, "message": text}.')
CHAT_SPEC = ToolkitSpec(
    toolkit=CHAT_TOOLKIT,
    name_for_model="Chat",
    name_for_human="Team chat",
    description_for_model="Message the people you work with and read their replies.",
    tools=(
        ToolSpec(
            name="SendMessage",
            summary="Send a direct message to one person by name; returns their reply.",
            parameters=(
                ParamSpec(name="to", type="string", description="The person's name (see ChatListPeople).",
                          required=True),
                ParamSpec(name="message", type="string", description="The message text.", required=True),
            ),
            returns=(_REPLIES,),
        ),
        ToolSpec(
            name="Broadcast",
            summary="Send one message to everyone in the chat; returns each person's reply.",
            parameters=(ParamSpec(name="message", type="string", description="The message text.", required=True),),
            returns=(_REPLIES,),
        ),
        ToolSpec(
            name="ListPeople",
            summary="List the people you can message, with what they do.",
            returns=(ReturnSpec(name="people", type="array",
                                description='One object per person: {"name": name, "about": text}.'),),
        ),
    ),
)


def _about(npc: NpcSpec) -> str:
    first = npc.profile.strip().splitlines()[0] if npc.profile.strip() else ""
    return first[:200]


class ChatToolkit:
    """The ``Chat`` toolkit of one env; the NPCs come with each episode's setup.

    Args:
        model: The chat model that plays every NPC (each with its own prompt and memory).
    """

    def __init__(self, model: ChatModel) -> None:
        self.model = model
        self._npcs: tuple[NpcSpec, ...] = ()
        self._roles: dict[str, PersonRole] = {}
        self.messages: list[NpcMessage] = []
        """Every message of the episode, both ways, in order."""

    @property
    def spec(self) -> ToolkitSpec:
        """The toolkit's spec."""
        return CHAT_SPEC

    def reset(self, setup: EpisodeSetup) -> None:
        """Fresh roles (empty memories) for the episode's NPCs."""
        self._npcs = setup.npcs
        names = tuple(n.name for n in setup.npcs)
        self._roles = {n.name.casefold(): npc_role(n, self.model, everyone=names, seed=setup.seed)
                       for n in setup.npcs}
        self.messages = []

    def close(self) -> None:
        """Nothing to release."""

    def _role(self, name: str) -> PersonRole:
        role = self._roles.get(name.strip().casefold())
        if role is None:
            people = ", ".join(n.name for n in self._npcs) or "nobody"
            raise ToolCallError(f"there is no one named {name!r} in the chat; people here: {people}")
        return role

    def _exchange(self, role: PersonRole, text: str, label: str) -> dict[str, str]:
        self.messages.append(NpcMessage(npc=role.name, direction="to_npc", content=text))
        answer = role.reply(text, label=label)
        self.messages.append(NpcMessage(npc=role.name, direction="from_npc", content=answer))
        return {"from": role.name, "message": answer}

    def call(self, call: ToolCall, history: Sequence[Step]) -> ToolResult:
        """Delivers a message (or lists people) and returns the replies as JSON.

        Raises:
            ToolCallError: an unknown recipient or an empty message (the agent sees why).
            PersonError: an NPC gave no valid reply (ends the episode as an infra error).
            LLMBackendError: the NPC model failed.
        """
        if not self._npcs and call.tool != "ChatListPeople":
            raise ToolCallError("there is nobody in the chat in this episode")
        if call.tool == "ChatListPeople":
            people = [{"name": n.name, "about": _about(n)} for n in self._npcs]
            return ToolResult(observation=json.dumps({"people": people}, ensure_ascii=False))
        text = str(call.arguments.get("message", ""))
        if not text.strip():
            raise ToolCallError("the message is empty; write what you want to say")
        if call.tool == "ChatSendMessage":
            replies = [self._exchange(self._role(str(call.arguments.get("to", ""))), text, "MESSAGE")]
        elif call.tool == "ChatBroadcast":
            return self._broadcast(text)
        else:
            raise EnvStateError(f"the Chat toolkit was asked to run foreign tool {call.tool}")
        return ToolResult(observation=json.dumps({"replies": replies}, ensure_ascii=False))

    def _broadcast(self, text: str) -> ToolResult:
        """Everyone gets the message (and it is recorded for each); only the first ``MAX_BROADCAST_REPLIES``
        people, in the case's order, answer, so one broadcast costs a bounded number of model calls."""
        answering, silent = self._npcs[:MAX_BROADCAST_REPLIES], self._npcs[MAX_BROADCAST_REPLIES:]
        replies = [self._exchange(self._roles[n.name.casefold()], text, "BROADCAST") for n in answering]
        for npc in silent:
            self.messages.append(NpcMessage(npc=npc.name, direction="to_npc", content=text))
        result: dict[str, object] = {"replies": replies}
        if silent:
            result["not_answered"] = [n.name for n in silent]
        return ToolResult(observation=json.dumps(result, ensure_ascii=False))
