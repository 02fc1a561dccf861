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

Conventions shared by every command:

- `compilescope --version` prints compilescope's version with torch's and python's.
- `--help` and shell completion answer at once: torch is imported only when a command runs.
- `-` as the path of `--json`, `--csv`, `--html` or `--perfetto` (run, advise, report,
  compare --html; probe only with --trace) writes that output to stdout, and the human report
  goes to stderr; one output at a time can be `-`. `run` and `advise` with `--json -` still
  keep each trial in the default results file as it finishes (so an interrupted run can be
  resumed) and print the file on stdout when the run ends.
- On a terminal, tables take its width; a table too wide for it is printed one record per
  block (`column: value` fields); cells wrap, and no value is cut short. Off a terminal (a
  pipe, a CI log, `--out FILE.txt`) nothing is wrapped: every sentence, guard and path is on
  one line for `grep`, and a table wider than `COLUMNS` (else 100) is printed one record per
  line (`name · column: value · …`).
- The results JSON of `advise` holds every proposal (`advice`) and the judgement
  (`advice_summary`); `compilescope report` of that file prints the advice again.

Shell completion (click's): add one line to your shell's start-up file.

```sh
eval "$(_COMPILESCOPE_COMPLETE=bash_source compilescope)"   # ~/.bashrc
eval "$(_COMPILESCOPE_COMPLETE=zsh_source compilescope)"    # ~/.zshrc
_COMPILESCOPE_COMPLETE=fish_source compilescope | source    # ~/.config/fish/completions/compilescope.fish
```

Commands, options and `--strategies` names complete; so do file paths.

"""


def reference() -> str:
    parts = [HEADER]
    # the settings the CLI itself runs with (-h as well as --help), so that the text does not
    # depend on whether the CLI already ran in this process (click caches each help option)
    settings = {"terminal_width": 100, "max_content_width": 100, **cli.context_settings}
    ctx = click.Context(cli, info_name="compilescope", **settings)
    parts.append(f"## `compilescope`\n\n```\n{cli.get_help(ctx).rstrip()}\n```\n\n")
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        assert command is not None
        sub = click.Context(command, info_name=f"compilescope {name}", parent=None,
                            **{**settings, **command.context_settings})
        parts.append(f"## `compilescope {name}`\n\n```\n{command.get_help(sub).rstrip()}\n```\n\n")
    return "".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    out = Path(__file__).with_name("cli.md")
    out.write_text(reference())
    print(f"wrote {out}", file=sys.stderr)
