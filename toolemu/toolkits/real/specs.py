"""Specs of the real toolkits, in the ToolEmu toolkit schema so cases can mix them with emulated ones."""

from __future__ import annotations

from toolemu.core.types import ExceptionSpec, ParamSpec, ReturnSpec, ToolkitSpec, ToolSpec

_INVALID = ExceptionSpec(
    name="InvalidRequestException", description="The arguments are missing or malformed."
)
_NOT_FOUND = ExceptionSpec(name="NotFoundException", description="The path does not exist.")
_OUTPUT = ReturnSpec(
    name="output",
    type="string",
    description="Everything written to standard output and standard error, shortened when very long.",
)
_EXIT = ReturnSpec(
    name="exit_code",
    type="integer",
    description="Exit status: 0 means success; 124 means the time limit expired and the run was stopped.",
)

TERMINAL_SPEC = ToolkitSpec(
    toolkit="Terminal",
    name_for_model="Terminal",
    name_for_human="Terminal command executor",
    description_for_model=(
        "Runs shell commands in a bash session on the user's machine. The session persists between calls: "
        "the working directory, environment variables and background jobs carry over."
    ),
    description_for_human="Runs shell commands in a persistent bash session.",
    tools=(
        ToolSpec(
            name="Execute",
            summary="Run one bash command line and return its combined output and exit status.",
            parameters=(
                ParamSpec(
                    name="command", type="string", description="The command line to run.", required=True
                ),
            ),
            returns=(_OUTPUT, _EXIT),
            exceptions=(_INVALID,),
        ),
    ),
)
"""ToolEmu's ``Terminal`` shape: ``TerminalExecute(command) -> {output, exit_code}``."""

PYTHON_SPEC = ToolkitSpec(
    toolkit="Python",
    name_for_model="Python",
    name_for_human="Python interpreter",
    description_for_model=(
        "Runs Python code in a persistent interpreter on the user's machine. Variables, imports and "
        "definitions carry over between calls; the value of a final expression is printed."
    ),
    description_for_human="Runs Python code in a persistent interpreter.",
    tools=(
        ToolSpec(
            name="Execute",
            summary="Run Python code and return what it printed (and the value of a final expression).",
            parameters=(
                ParamSpec(name="code", type="string", description="The code to run.", required=True),
            ),
            returns=(
                _OUTPUT,
                ReturnSpec(
                    name="exit_code",
                    type="integer",
                    description="0 on success, 1 after an uncaught exception, 124 if the time limit expired.",
                ),
            ),
            exceptions=(_INVALID,),
        ),
    ),
)
"""``PythonExecute(code) -> {output, exit_code}``."""

_PATH = ParamSpec(
    name="path",
    type="string",
    description="Absolute path, or a path relative to /workspace.",
    required=True,
)

FILES_SPEC = ToolkitSpec(
    toolkit="Files",
    name_for_model="Files",
    name_for_human="File manager",
    description_for_model=(
        "Reads, writes, lists and deletes files on the user's machine. Paths may be absolute or relative to "
        "/workspace; only /workspace, /home, /tmp, /etc and /var are accessible."
    ),
    description_for_human="Reads, writes, lists and deletes files.",
    tools=(
        ToolSpec(
            name="Read",
            summary="Return the text content of a file.",
            parameters=(_PATH,),
            returns=(
                ReturnSpec(name="content", type="string", description="The file's text (shortened if long)."),
                ReturnSpec(
                    name="truncated", type="boolean", description="Whether the content was shortened."
                ),
            ),
            exceptions=(_INVALID, _NOT_FOUND),
        ),
        ToolSpec(
            name="Write",
            summary="Write text to a file, creating it and its folders if needed.",
            parameters=(
                _PATH,
                ParamSpec(name="content", type="string", description="The text to write.", required=True),
                ParamSpec(name="append", type="boolean", description="Append instead of replacing."),
            ),
            returns=(ReturnSpec(name="success", type="boolean", description="Whether the write succeeded."),),
            exceptions=(_INVALID,),
        ),
        ToolSpec(
            name="List",
            summary="List the entries of a folder with their type and size.",
            parameters=(_PATH,),
            returns=(
                ReturnSpec(
                    name="entries",
                    type="array",
                    description="Objects with `name`, `type` (file, dir or symlink) and `size`.",
                ),
            ),
            exceptions=(_INVALID, _NOT_FOUND),
        ),
        ToolSpec(
            name="Delete",
            summary="Delete a file, or a folder (with everything in it when `recursive` is true).",
            parameters=(
                _PATH,
                ParamSpec(name="recursive", type="boolean", description="Delete a non-empty folder."),
            ),
            returns=(
                ReturnSpec(name="success", type="boolean", description="Whether the deletion succeeded."),
            ),
            exceptions=(_INVALID, _NOT_FOUND),
        ),
    ),
)
"""``FilesRead``, ``FilesWrite``, ``FilesList``, ``FilesDelete`` over the sandbox's writable folders."""
