"""Shared value types every layer speaks: messages, tool calls, tool specs, seed environments."""

from __future__ import annotations

import posixpath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator
from pydantic_core import PydanticCustomError

from toolemu.core.limits import MAX_SEED_CONTENT_CHARS, MAX_TEXT_CHARS

JsonType = Literal["string", "integer", "number", "boolean", "array", "object", "null"]
"""Parameter and return types used by ToolEmu toolkit specs."""


class Frozen(BaseModel):
    """Base for boundary-crossing values: immutable and strict about unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Message(Frozen):
    """One chat message."""

    role: Literal["system", "user", "assistant", "tool"]
    """Who speaks."""
    content: str
    """The text."""


class ToolCall(Frozen):
    """A parsed tool invocation."""

    tool: str
    """Model-facing tool name, toolkit + tool (``TerminalExecute``)."""
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    """Arguments as parsed JSON."""


class ParamSpec(Frozen):
    """One tool parameter."""

    name: str
    """Parameter name."""
    type: JsonType
    """JSON type."""
    description: str = ""
    """What it means, for the model."""
    required: bool = False
    """Whether the call must include it; ToolEmu data sometimes omits this (treated as false)."""

    @field_validator("required", mode="before")
    @classmethod
    def _none_is_false(cls, value: object) -> object:
        return False if value is None else value


class ReturnSpec(Frozen):
    """One field of a tool's JSON result."""

    name: str
    """Field name."""
    type: JsonType
    """JSON type."""
    description: str = ""
    """What it means."""
    optional: bool = False
    """Whether the field may be absent."""


class ExceptionSpec(Frozen):
    """A declared exception a tool may return instead of a result."""

    name: str
    """Exception name (``NotFoundException``)."""
    description: str = ""
    """When it happens."""


class ToolSpec(Frozen):
    """One tool of a toolkit (ToolEmu toolkit JSON compatible)."""

    name: str
    """Tool name within its toolkit (``Execute``)."""
    summary: str
    """What the tool does."""
    parameters: tuple[ParamSpec, ...] = ()
    """Arguments."""
    returns: tuple[ReturnSpec, ...] = ()
    """Fields of the JSON result."""
    exceptions: tuple[ExceptionSpec, ...] = ()
    """Declared exceptions."""


class ToolkitSpec(Frozen):
    """A toolkit: a named group of tools (ToolEmu toolkit JSON compatible)."""

    toolkit: str
    """Registry id of the toolkit."""
    name_for_model: str
    """Prefix of model-facing tool names."""
    name_for_human: str = ""
    """Display name."""
    description_for_model: str = ""
    """Toolkit description shown to models."""
    description_for_human: str = ""
    """Display description."""
    category: str | None = None
    """Optional grouping."""
    tools: tuple[ToolSpec, ...]
    """The tools."""

    def tool_names(self) -> list[str]:
        """Returns model-facing names (``name_for_model`` + tool name)."""
        return [self.name_for_model + t.name for t in self.tools]

    def find(self, model_facing_name: str) -> ToolSpec | None:
        """Returns the tool whose model-facing name matches, or ``None``."""
        for t in self.tools:
            if self.name_for_model + t.name == model_facing_name:
                return t
        return None


WRITABLE_DIRS: tuple[str, ...] = ("workspace", "outputs", "home", "tmp", "etc", "var", "root")
"""Top-level folders of a sandbox's episode root, the only places a seed file may go; each that exists is
mounted at ``/<name>`` inside the sandbox (``outputs``, the shell's first working directory, and ``root``, the
home of uid 0, only under the ``oas`` profile)."""


def seed_path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a file in a sandbox's writable folders, or ``None`` when it can.

    Examples:
        >>> seed_path_problem("/workspace/notes.txt") is None
        True
        >>> seed_path_problem("/usr/bin/ls")
        "path '/usr/bin/ls' is not under /workspace, /outputs, /home, /tmp, /etc, /var, /root"
    """
    norm = posixpath.normpath(path)
    top = norm.lstrip("/").split("/", 1)[0]
    if not path.startswith("/") or norm.startswith("//") or top not in WRITABLE_DIRS or ".." in norm.split("/"):
        return f"path {path!r} is not under {', '.join('/' + d for d in WRITABLE_DIRS)}"
    return None


class SeedFile(Frozen):
    """A file placed in a sandbox before the episode starts."""

    path: str
    """Absolute path inside the sandbox (``/workspace/notes.txt``)."""
    content: str | None = None
    """Inline text content."""
    source: str | None = None
    """A file, relative to the case file's folder, to copy instead of ``content``."""
    mode: int = 0o644
    """Permission bits, an int in 0..0o777 (YAML ``mode: 0644`` unquoted is octal); setuid, setgid and sticky
    bits are refused, and so are strings and booleans."""

    @field_validator("mode", mode="before")
    @classmethod
    def _check_mode(cls, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            raise PydanticCustomError(
                "seed_mode", "{value} is not an int; write the mode as a number: `mode: 0644` (octal) or 420",
                {"value": repr(value)},
            )
        if not 0 <= value <= 0o777:
            raise PydanticCustomError(
                "seed_mode",
                "{value} is outside 0..0o777 (setuid, setgid and sticky bits are refused); write e.g. 0644",
                {"value": f"{value:#o}" if value >= 0 else str(value)},
            )
        return value


SERVICE_NAMES: tuple[str, ...] = ("owncloud", "gitlab", "plane")
"""The company web services a case may need (emulated per episode by ``toolemu.services``)."""


class ServiceFile(Frozen):
    """A file a service holds when the episode starts (a document in ownCloud): the task's own file or a
    stand-in document generated by ``toolemu.services.standins``."""

    service: Literal["owncloud"]
    """The service that holds it (only ownCloud holds files of a case)."""
    path: str = Field(min_length=1, max_length=500)
    """Where, relative to the user's files root (``Documents/Financials/budget.xlsx``); a folder for a stand-in
    made of several files (``Documents/Financials/invoices_pdfs``)."""
    source: str | None = None
    """A file, relative to the case file's folder, to copy (``utils/budget.xlsx``)."""
    content: str | None = Field(default=None, max_length=MAX_SEED_CONTENT_CHARS)
    """Inline text, written as UTF-8 (a note or page the case plants: ``toolemu.attacks``' service vector)."""
    standin: str | None = None
    """The name of a generated stand-in document (``drinks_survey.pdf``), written by us in place of a document
    OpenAgentSafety ships only inside its service images."""

    @field_validator("path")
    @classmethod
    def _relative_clean(cls, value: str) -> str:
        parts = value.split("/")
        if value.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in value or "\0" in value:
            raise PydanticCustomError(
                "service_path", "{value} is not a clean relative path; write e.g. `Documents/Financials/budget.xlsx`",
                {"value": repr(value)},
            )
        return value

    @model_validator(mode="after")
    def _one_origin(self) -> ServiceFile:
        if [self.source, self.standin, self.content].count(None) != 2:
            raise PydanticCustomError(
                "service_file",
                "service file {path}: give exactly one of `source` (a case file), `content` (inline text) or `standin`",
                {"path": repr(self.path)},
            )
        return self


class ServiceNote(Frozen):
    """Text a service shows inside its own pages when the episode starts: appended to the description of every
    open GitLab issue of the matching projects (``toolemu.attacks``' service vector)."""

    service: Literal["gitlab"]
    """The service whose pages carry it."""
    project: str = Field(default="*", min_length=1, max_length=200)
    """A glob of project paths (``api-server``, ``*``)."""
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    """The text, appended after a blank line."""


DEFAULT_USER = "user"
"""The sandbox account's name when a case names none."""
USER_NAME_PATTERN = r"^[a-z_][a-z0-9_-]{0,31}$"
"""What ``EnvironmentSpec.user`` may be: a POSIX-style lower-case account name of at most 32 characters."""
RESERVED_USERS: tuple[str, ...] = ("root", "daemon", "nobody", "nogroup")
"""Accounts of the sandbox's own ``/etc/passwd`` that the agent's account may not be named after."""

SandboxProfile = Literal["default", "oas"]
"""What the sandbox looks like from inside. ``default``: an unprivileged account (``EnvironmentSpec.user``,
uid 1000) and the host's Python. ``oas``: OpenAgentSafety's task image: root inside, ``python``, ``sudo``, the
OAS libraries (``toolemu.toolkits.sandbox.oas_image``)."""


class EnvironmentSpec(Frozen):
    """The initial state of a real-tool episode."""

    files: tuple[SeedFile, ...] = ()
    """Files to create."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for the shell and interpreter."""
    base_dir: str | None = None
    """Folder that ``SeedFile.source`` paths are relative to; set by the loader."""
    sandbox_profile: SandboxProfile = "default"
    """The sandbox profile (imported OpenAgentSafety cases default to ``oas``)."""
    service_files: tuple[ServiceFile, ...] = ()
    """Files the case's services hold when the episode starts (its documents in ownCloud)."""
    service_notes: tuple[ServiceNote, ...] = ()
    """Text the case's services show in their own pages when the episode starts (GitLab issue descriptions)."""
    service_setup: tuple[str, ...] = ()
    """Python scripts (relative to the case file's folder) run against the case's services after they start and
    before the agent does, with OpenAgentSafety's ``common`` and ``config`` importable (upstream
    ``populate_data.py``: issues and milestones a task needs)."""
    user: str = Field(default=DEFAULT_USER, pattern=USER_NAME_PATTERN)
    """The account the agent works as, as the case's story names it (uid 1000): ``$USER``, ``$LOGNAME``, its
    ``/etc/passwd`` entry, and ``$HOME`` ``/home/<user>``. Not one of ``RESERVED_USERS`` (the
    sandbox's own accounts); under the ``oas`` profile the agent is ``root`` with home ``/root`` and this stays
    unset."""

    @field_validator("user")
    @classmethod
    def _check_user(cls, value: str) -> str:
        if value in RESERVED_USERS:
            raise PydanticCustomError(
                "sandbox_user",
                "{value} is one of the sandbox's own accounts ({reserved}); name the agent's account, e.g. `dev`"
                " (for a root agent use `sandbox_profile: oas`)",
                {"value": repr(value), "reserved": ", ".join(RESERVED_USERS)},
            )
        return value

    @model_validator(mode="after")
    def _oas_is_root(self) -> EnvironmentSpec:
        if self.sandbox_profile == "oas" and self.user != DEFAULT_USER:
            raise PydanticCustomError(
                "sandbox_user",
                "user {value} does not apply under `sandbox_profile: oas`, where the agent is root with home "
                "/root; remove `user` or use the default profile",
                {"value": repr(self.user)},
            )
        return self

    @property
    def home(self) -> str:
        """The agent's home folder in the sandbox: ``/home/<user>``, or ``/root`` under the ``oas`` profile."""
        return "/root" if self.sandbox_profile == "oas" else f"/home/{self.user}"


class EmulationContext(Frozen):
    """What a tool emulator may know about the case (adversarial mode uses the risk fields)."""

    instruction: str
    """The user's instruction to the agent."""
    world: tuple[str, ...] = ()
    """What the services hold (``Case.world``): shown in every mode."""
    underspecified_task_information: tuple[str, ...] = ()
    """Task information the user left out."""
    underspecified_safety_constraints: tuple[str, ...] = ()
    """Safety constraints the user left out."""
    risky_actions: tuple[str, ...] = ()
    """Risky actions the agent might take."""
    risky_outcomes: tuple[str, ...] = ()
    """Risky outcomes of those actions."""
