"""What every defense shares: the ``Defense`` protocol, the events a defense records, the episode facts it reads
from the first observation, and ``DefendedAgent``, the wrapper that puts a defense between any agent and the env.

A defense changes only what the wrapped agent sees and which of its actions go on to the env. It never touches
the env, the tools or the graders: the trajectory, the judges and the checks see the env's real observations and
the actions that reached it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol, runtime_checkable

from toolemu.agents.base import Agent
from toolemu.agents.defenses.observation import EpisodeStart, parse_first_observation
from toolemu.core.action import ParsedAction, parse_action
from toolemu.core.errors import EnvStateError, ToolCallError
from toolemu.core.react import final_step
from toolemu.core.types import Frozen, ToolCall

logger = logging.getLogger(__name__)

DefenseEventKind = Literal["blocked_call", "withheld_result", "guard_ask", "guard_refuse", "guard_finish",
                           "stopped"]
"""``blocked_call``: a tool call kept from the env (the agent saw why); ``withheld_result``: a tool's output
replaced before the agent saw it; ``guard_*``: the guard answered in the agent's place; ``stopped``: the agent
kept making blocked calls and the defense ended the episode with a final answer."""

MAX_BLOCKED_IN_A_ROW = 3
"""Blocked calls one agent turn may make before the defense ends the episode (a blocked call never reaches the
env, so it uses no step of the env's budget; this bound stands in for it)."""
STOPPED_ANSWER = ("I stopped: my last {n} tool calls were blocked by a defense ({defense}) and I could not go on "
                  "with the tools I may use.")


class DefenseEvent(Frozen):
    """Something a defense did, stored with the episode's record (``EpisodeRecord.defense_events``)."""

    defense: str
    """The defense's name."""
    kind: DefenseEventKind
    """What it did."""
    turn: int
    """The env step it happened before (0-based: the number of actions the env had received)."""
    tool: str | None = None
    """The tool concerned, when there is one."""
    detail: str = ""
    """Why, in a line: the arguments of a blocked call, the detector's evidence, the guard's choice."""


class Screen(NamedTuple):
    """A defense's decision about one action of the agent: send ``action`` to the env, or ``block`` it."""

    action: str
    """The action text that goes to the env (the agent's own, or one the defense wrote in its place)."""
    block: str | None = None
    """When set, nothing goes to the env: the agent sees this text as the answer to its action and acts again."""


@runtime_checkable
class Defense(Protocol):
    """One episode's defense. ``DefendedAgent`` calls ``start`` once, then ``observe`` for every later env
    observation and ``screen`` for every action of the agent.

    Raises (every method):
        DefenseError: the defense's model failed or gave nothing readable (the episode ends in error).
    """

    name: str
    """The registered name (``--defense``)."""
    version: str
    """Changes whenever what the agent sees or what is blocked changes (part of the run's config hash)."""

    def start(self, start: EpisodeStart) -> str:
        """Returns the first observation the agent sees."""
        ...

    def observe(self, call: ToolCall | None, observation: str, turn: int) -> str:
        """Returns what the agent sees of the env's answer ``observation`` to its last action: a tool output
        when ``call`` (the call it answers) is set, else the env's other text (format help, the user's reply)."""
        ...

    def screen(self, action: str, parsed: ParsedAction | None, turn: int) -> Screen:
        """Decides what becomes of ``action`` (``parsed``: ``None`` when the env will not parse it either)."""
        ...

    @property
    def events(self) -> tuple[DefenseEvent, ...]:
        """What the defense did this episode, in order."""
        ...


class PassThrough:
    """A defense that changes nothing; the concrete defenses override what they change.

    Args:
        name: The defense's registered name.
        version: Its version.
    """

    def __init__(self, name: str, version: str) -> None:
        self.name = name
        self.version = version
        self._events: list[DefenseEvent] = []
        self.episode: EpisodeStart | None = None

    @property
    def events(self) -> tuple[DefenseEvent, ...]:
        """What the defense did this episode, in order."""
        return tuple(self._events)

    def record(self, kind: DefenseEventKind, turn: int, *, tool: str | None = None, detail: str = "") -> None:
        """Records an event (its detail cut to one line of at most 300 characters)."""
        line = " ".join(detail.split())
        self._events.append(DefenseEvent(defense=self.name, kind=kind, turn=turn, tool=tool,
                                         detail=line if len(line) <= 300 else line[:299] + "…"))

    def start(self, start: EpisodeStart) -> str:
        """The first observation unchanged (and a new episode's events)."""
        self.episode, self._events = start, []
        return start.observation

    def observe(self, call: ToolCall | None, observation: str, turn: int) -> str:
        """A tool output through ``result``; any other observation unchanged."""
        return observation if call is None else self.result(call, observation, turn)

    def result(self, call: ToolCall, observation: str, turn: int) -> str:
        """The tool's output unchanged."""
        return observation

    def screen(self, action: str, parsed: ParsedAction | None, turn: int) -> Screen:
        """Every action goes to the env."""
        return Screen(action)


def _parse(action: str) -> ParsedAction | None:
    try:
        return parse_action(action)
    except ToolCallError:  # the env will answer it with its format help; the defense lets it through
        return None


@dataclass(slots=True)
class _Turn:
    last_call: ToolCall | None = None
    first_pending: bool = True
    turn: int = 0


class DefendedAgent:
    """Any ``Agent`` with a defense between it and the env; itself an ``Agent``.

    Which env observations are tool outputs: the answer to an action that parsed as a tool call (what the env
    returned for it, a rejection included). Every other observation (the format help after an unparseable
    action, the simulated user's reply after a question) reaches the agent unchanged. A blocked action never
    reaches the env: the agent sees the block's text as the answer and acts again, at most
    ``MAX_BLOCKED_IN_A_ROW`` times in a row; then the defense gives a final answer saying so (``stopped``).

    Args:
        agent: The agent under test.
        defense: This episode's defense (a fresh one per episode).
    """

    def __init__(self, agent: Agent, defense: Defense) -> None:
        self.agent = agent
        self.defense = defense
        self._state = _Turn()
        self._first = ""
        self._own: list[DefenseEvent] = []
        inner = getattr(agent, "version", type(agent).__name__)
        self.version = f"{inner}+{defense.version}"
        """The wrapped agent's version and the defense's (recorded in the run's config hash)."""

    @property
    def defense_name(self) -> str:
        """The defense's registered name."""
        return self.defense.name

    @property
    def defense_events(self) -> tuple[DefenseEvent, ...]:
        """What the defense did this episode."""
        return tuple(sorted((*self.defense.events, *self._own), key=lambda e: e.turn))

    def reset(self, observation: str) -> None:
        """Starts the episode: the defense reads the first observation and the agent sees its version of it.

        Raises:
            ConfigError: the first observation is not the env's (no tools or no user request to read).
            DefenseError: the defense could not start.
        """
        self._state, self._own = _Turn(), []
        self._first = self.defense.start(parse_first_observation(observation))
        self.agent.reset(self._first)

    def act(self, observation: str) -> str:
        """The agent's next action as the defense lets it through (or the defense's own, in its place).

        Raises:
            EnvStateError: ``act`` before ``reset``.
            DefenseError: the defense's model failed or gave nothing readable.
            LLMBackendError: the agent's model failed.
        """
        state = self._state
        if not self._first:
            raise EnvStateError("DefendedAgent.act() called before reset(); call reset(first_observation) first")
        if state.first_pending:
            seen, state.first_pending = self._first, False
        else:
            seen = self.defense.observe(state.last_call, observation, state.turn)
        for _ in range(MAX_BLOCKED_IN_A_ROW):
            action = self.agent.act(seen)
            parsed = _parse(action)
            decision = self.defense.screen(action, parsed, state.turn)
            if decision.block is None:
                sent = parsed if decision.action == action else _parse(decision.action)
                state.last_call = sent.tool_call if sent is not None and sent.kind == "tool" else None
                state.turn += 1
                return decision.action
            seen = decision.block
        logger.info("defense %s: %d blocked calls in a row; ending the episode", self.defense.name,
                    MAX_BLOCKED_IN_A_ROW)
        self._own.append(DefenseEvent(defense=self.defense.name, kind="stopped", turn=state.turn,
                                      detail=f"{MAX_BLOCKED_IN_A_ROW} blocked calls in a row"))
        state.last_call = None
        state.turn += 1
        return final_step(STOPPED_ANSWER.format(n=MAX_BLOCKED_IN_A_ROW, defense=self.defense.name))
