"""``toolemu toolkits``: emulated toolkit specs; ``import-mcp`` makes one from an MCP server's tools."""

from __future__ import annotations

from pathlib import Path

import click

from toolemu.cli.terminal import echo
from toolemu.core.errors import ConfigError
from toolemu.core.outfiles import write_new, write_replace
from toolemu.toolkits.mcp_import import check_toolkit_name, fetch_tools_list, read_tools_list, toolkit_from_tools_list
from toolemu.toolkits.spec_loader import dump_toolkit_spec


@click.group("toolkits")
def toolkits() -> None:
    """Emulated toolkit specs: import an MCP server's tools."""


@toolkits.command("import-mcp")
@click.option("--from-json", "from_json", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A saved tools/list answer: {\"tools\": [...]} or the JSON-RPC response holding it.")
@click.option("--command", "command", help="An MCP server's command line, started over stdio and asked for its tools.")
@click.option("--name", required=True, help="Toolkit name and tool-name prefix (letters, digits, _): McpFiles.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder to write <name>.json into (a toolkits/ folder beside the cases that use it).")
@click.option("--description", default="", help="The toolkit's description for models (default: the server's "
              "instructions, else one naming the server).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1, max=600), default=30.0, show_default=True,
              help="Seconds a --command server has to start and list its tools.")
@click.option("--force", is_flag=True, help="Replace <name>.json if it exists.")
def import_mcp_cmd(from_json: Path | None, command: str | None, name: str, out_dir: Path, description: str,
                   timeout_s: float, force: bool) -> None:
    """Write an emulated toolkit spec from an MCP server's tools/list (a file, or a live server)."""
    if (from_json is None) == (command is None):
        raise ConfigError("import-mcp: give exactly one of --from-json FILE or --command \"<server command>\"")
    check_toolkit_name(name)  # before any server is started
    if from_json is not None:
        data, source, human = read_tools_list(from_json), str(from_json), ""
    else:
        server = fetch_tools_list(str(command), timeout_s=timeout_s)
        data, source, human = server.result, f"--command {command!r}", server.server_name
        description = description or server.instructions
    made = toolkit_from_tools_list(data, name=name, source=source, description=description, human_name=human)
    path = out_dir / f"{name}.json"
    if not force and path.exists():
        raise ConfigError(f"--out {path}: already exists; pass --force to replace it, or choose another --name")
    out_dir.mkdir(parents=True, exist_ok=True)
    (write_replace if force else write_new)(path, dump_toolkit_spec(made.spec))
    for note in made.notes:
        echo(f"note: {note}")
    echo(f"wrote {path}: toolkit {name}, {len(made.spec.tools)} tools ({', '.join(made.spec.tool_names())})")
