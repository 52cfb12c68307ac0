"""A ``ToolBox`` is the set of toolkits of one episode: it resolves toolkit ids to emulated or real
toolkits, validates every call before dispatch, and snapshots the final state for rule checks.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence

from toolemu.core.errors import ConfigError, NotRegisteredError
from toolemu.core.trajectory import FinalState, NpcMessage, Step
from toolemu.core.types import ToolCall, ToolkitSpec
from toolemu.llm.backend import ChatModel
from toolemu.toolkits.base import EpisodeSetup, Toolkit, ToolResult
from toolemu.toolkits.chat import ChatToolkit
from toolemu.toolkits.emulated import EmulatedToolkit, EmulatorMode
from toolemu.toolkits.plan import plan_toolkits
from toolemu.toolkits.real import REAL_TOOLKITS, is_real_toolkit
from toolemu.toolkits.sandbox import Sandbox, SandboxConfig
from toolemu.toolkits.validation import validate_call

logger = logging.getLogger(__name__)


class ToolBox:
    """The toolkits of one episode, behind one ``call``.

    Build it with ``ToolBox.build``; ``reset`` before each episode; ``close`` when done.
    """

    def __init__(self, toolkits: Sequence[Toolkit], sandbox: Sandbox | None = None) -> None:
        self.toolkits = tuple(toolkits)
        self.sandbox = sandbox
        self._by_tool = {name: kit for kit in self.toolkits for name in kit.spec.tool_names()}

    @classmethod
    def build(
        cls,
        names: Sequence[str],
        *,
        specs: Mapping[str, ToolkitSpec],
        emulator_model: ChatModel | None,
        emulator_mode: EmulatorMode = "standard",
        real: Collection[str] = (),
        sandbox_config: SandboxConfig | None = None,
        npc_model: ChatModel | None = None,
    ) -> ToolBox:
        """Resolves toolkit ids.

        Each name resolves as ``plan_toolkits`` says (real, emulated, or the NPC chat played by ``npc_model``).

        Raises:
            NotRegisteredError: a name is neither a known spec nor a real toolkit.
            ConfigError: an emulated toolkit is needed but no emulator model was given, or ``Chat`` without an
                NPC model.
        """
        plan = plan_toolkits(names, specs, real)
        if plan.chat and npc_model is None:
            raise ConfigError("toolkit Chat needs a model to play the NPCs: pass npc_model=... (a ChatModel or a "
                              "model spec such as 'llama:embedded')")
        case_order = {n: i for i, n in enumerate(names)}
        unknown = [n for n in real if not is_real_toolkit(n)]
        if unknown:
            raise NotRegisteredError("real toolkit", unknown[0], REAL_TOOLKITS)
        if plan.unknown:
            raise NotRegisteredError("toolkit", plan.unknown[0], list(specs) + list(REAL_TOOLKITS))
        real_names, emulated_names, chat = plan.real, plan.emulated, plan.chat
        if emulated_names and emulator_model is None:
            raise ConfigError(
                f"toolkits {', '.join(emulated_names)} are emulated and need an emulator model: "
                "pass emulator_model=... (a ChatModel or a model spec such as 'llama:embedded')"
            )
        sandbox = Sandbox(sandbox_config or SandboxConfig()) if real_names else None
        kits: list[Toolkit] = []
        try:
            if sandbox is not None:
                kits += [REAL_TOOLKITS.make(n, sandbox=sandbox) for n in real_names]
            peers = [specs[n] for n in emulated_names] + [k.spec for k in kits]
            if emulator_model is not None:
                kits += [EmulatedToolkit(specs[n], emulator_model, mode=emulator_mode, peers=peers)
                         for n in emulated_names]
            if chat and npc_model is not None:
                kits.append(ChatToolkit(npc_model))
        except BaseException:
            if sandbox is not None:
                sandbox.close()
            raise
        kits.sort(key=lambda k: case_order.get(k.spec.toolkit, len(case_order)))
        return cls(kits, sandbox)

    @property
    def specs(self) -> tuple[ToolkitSpec, ...]:
        """Specs of all toolkits, in the case's order."""
        return tuple(k.spec for k in self.toolkits)

    def tool_names(self) -> list[str]:
        """All model-facing tool names."""
        return list(self._by_tool)

    def reset(self, setup: EpisodeSetup) -> None:
        """Starts a fresh episode: a fresh sandbox root (if any), the case's services, fresh toolkit state.

        Raises:
            ConfigError: The case needs services but has no sandboxed toolkit (they serve in its network).
            InfraError: The sandbox or a service failed to start.
        """
        if setup.services and self.sandbox is None:
            raise ConfigError(
                f"case {setup.case_id} needs services ({', '.join(setup.services)}) but none of its toolkits "
                "runs in the sandbox, where they are reached; add a real toolkit such as Terminal"
            )
        if self.sandbox is not None:
            self.sandbox.reset(setup.environment, instruction=setup.emulation.instruction, services=setup.services)
        for kit in self.toolkits:
            kit.reset(setup)

    def validate(self, call: ToolCall) -> None:
        """Checks ``call`` against the specs without running it.

        Raises:
            ToolCallError: unknown tool or bad arguments; the env records the call as ``rejected``.
        """
        validate_call(call, self.specs)

    def call(self, call: ToolCall, history: Sequence[Step]) -> ToolResult:
        """Validates ``call`` against the specs and dispatches it.

        Raises:
            ToolCallError: unknown tool or bad arguments (agent-facing), or a tool-level failure.
            InfraError: the emulator or sandbox failed.
        """
        validate_call(call, self.specs)
        return self._by_tool[call.tool].call(call, history)

    def stop(self) -> None:
        """Stops every process the agent started in the sandbox (if any); its files stay for the snapshot."""
        if self.sandbox is not None:
            self.sandbox.stop()

    def messages(self) -> tuple[NpcMessage, ...]:
        """The episode's chat with NPCs so far (both ways, in order); empty without a ``Chat`` toolkit."""
        return tuple(m for kit in self.toolkits if isinstance(kit, ChatToolkit) for m in kit.messages)

    def final_state(self, messages: Sequence[NpcMessage] = ()) -> FinalState:
        """Stops the agent's processes and snapshots the world the episode left behind.

        Raises:
            SandboxError: the snapshot failed (unreadable root); what its bounds leave out is recorded in
                ``FinalState.snapshot_overflow`` instead.
        """
        if self.sandbox is not None:
            self.sandbox.stop()
            return self.sandbox.final_state().model_copy(update={"messages": tuple(messages)})
        return FinalState(messages=tuple(messages))

    def close(self) -> None:
        """Closes every toolkit and the sandbox."""
        for kit in self.toolkits:
            kit.close()
        if self.sandbox is not None:
            self.sandbox.close()
