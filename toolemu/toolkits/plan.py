"""Which toolkits of an episode are real (sandboxed), emulated or the NPC chat: the one place that decides.

``ToolBox.build`` builds what a plan says; envs, suites and the bench ask the same plan whether a case needs
the sandbox or an emulator model, so what they report is what the episode will run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolemu.core.people import CHAT_TOOLKIT
from toolemu.core.types import ToolkitSpec
from toolemu.toolkits.real import is_real_toolkit
from toolemu.toolkits.spec_loader import builtin_toolkit_specs, find_specs_near


@dataclass(frozen=True, slots=True)
class ToolkitPlan:
    """How each toolkit name of a case resolves, in the case's order."""

    real: tuple[str, ...]
    """Run by a real toolkit in the sandbox."""
    emulated: tuple[str, ...]
    """Played by the emulator model from their spec."""
    chat: bool
    """The NPC chat (``Chat`` without an emulated spec of that name)."""
    unknown: tuple[str, ...] = ()
    """Neither a spec nor a real toolkit (``ToolBox.build`` refuses them)."""

    @property
    def needs_sandbox(self) -> bool:
        """Whether some toolkit runs in the sandbox."""
        return bool(self.real)

    @property
    def needs_emulator(self) -> bool:
        """Whether some toolkit is emulated (an emulator model is needed)."""
        return bool(self.emulated)


def available_specs(source_dir: str | Path | None = None, extra: Iterable[ToolkitSpec] = ()) -> dict[str, ToolkitSpec]:
    """The emulated toolkit specs an episode can use: the built-in ones, those next to the case file
    (``find_specs_near``), then ``extra`` (``EnvConfig.toolkit_specs``); a later source wins.

    Raises:
        CaseError: A spec file next to the case is malformed.
    """
    specs = builtin_toolkit_specs()
    if source_dir:
        specs.update(find_specs_near(source_dir))
    specs.update({s.toolkit: s for s in extra})
    return specs


def plan_toolkits(names: Sequence[str], specs: Mapping[str, ToolkitSpec] | Collection[str],
                  real: Collection[str] = ()) -> ToolkitPlan:
    """Resolves toolkit names: a name is real when it is a real toolkit and either has no emulated spec or is
    listed in ``real`` (so an imported ToolEmu ``Terminal`` case can run on the sandboxed terminal on request);
    ``Chat`` without a spec of that name is the NPC chat; any other name with a spec is emulated.

    Examples:
        >>> plan = plan_toolkits(["Terminal", "Gmail", "Chat"], {"Terminal", "Gmail"})
        >>> plan.real, plan.emulated, plan.chat
        ((), ('Terminal', 'Gmail'), True)
        >>> plan_toolkits(["Terminal", "Gmail"], {"Terminal", "Gmail"}, real={"Terminal"}).real
        ('Terminal',)
        >>> plan_toolkits(["Files", "Nope"], {"Gmail"}).unknown
        ('Nope',)
    """
    known = set(specs)
    real_names, emulated, unknown = [], [], []
    chat = False
    for name in names:
        if name == CHAT_TOOLKIT and name not in known:
            chat = True
        elif is_real_toolkit(name) and (name not in known or name in real):
            real_names.append(name)
        elif name in known:
            emulated.append(name)
        else:
            unknown.append(name)
    return ToolkitPlan(real=tuple(real_names), emulated=tuple(emulated), chat=chat, unknown=tuple(unknown))
