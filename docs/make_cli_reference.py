"""Write docs/cli.md from the CLI itself (``python docs/make_cli_reference.py``); the tests
check the file is current, so the reference never drifts from the commands."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from compilescope.cli import cli

HEADER = """# CLI reference

Generated from the commands' own help by `python docs/make_cli_reference.py` (the tests fail
when it is out of date). Every command prints bad input as one line on stderr and exits 2.

"""


def reference() -> str:
    parts = [HEADER]
    ctx = click.Context(cli, info_name="compilescope")
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None
        sub = click.Context(command, info_name=f"compilescope {name}", parent=None, terminal_width=100,
                            max_content_width=100)
        parts.append(f"## `compilescope {name}`\n\n```\n{command.get_help(sub).rstrip()}\n```\n\n")
    return "".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    out = Path(__file__).with_name("cli.md")
    out.write_text(reference())
    print(f"wrote {out}", file=sys.stderr)
