"""What every command shares at the edge: the console a report is printed on (its width in a
pipe), the outputs a command writes (``--out FILE`` by extension, the format flags its
aliases, ``-`` for stdout), the checks made on them before any work, the results lock, and
the one way a report is shown: write each output, print the report, say where each went."""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import sys
from pathlib import Path
from collections.abc import Iterator
from typing import Any, NamedTuple

import click
from rich.console import Console
from rich.text import Text

from ..errors import OptionError


class FiniteRange(click.FloatRange):
    """A float option in a range, and a number: ``nan`` and ``inf`` compare as inside any
    range (a ``nan`` timeout turns the watchdog off, an ``inf`` budget writes results no
    loader reads), so they are refused as the range refuses."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        got = super().convert(value, param, ctx)
        if isinstance(got, float) and not math.isfinite(got):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return got

EXIT_USAGE = 2
EXIT_FAILED = 1
PIPE_WIDTH = 100  # off a terminal with no COLUMNS: a table wider than this is printed one record per line
STDOUT = Path("-")  # an output path of `-`: written to stdout, with the human report on stderr


def output_width(stream: Any, environ: Any = None) -> int | None:
    """The width a report on ``stream`` is laid out to: None on a terminal (rich measures it);
    else ``COLUMNS`` when set (CI logs, ``COLUMNS=80 compilescope … | less``); else
    :data:`PIPE_WIDTH`."""
    import os

    try:
        if stream.isatty():
            return None
    except (AttributeError, ValueError):  # no stream, or a closed one
        pass
    columns = str((os.environ if environ is None else environ).get("COLUMNS", "")).strip()
    return int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH


def console(stderr: bool = False) -> Console:
    """On a terminal rich wraps at its width; off one (a pipe, a log) nothing is hard-wrapped —
    one record per line (see :mod:`compilescope.render.grid`) — and the width only picks a
    table or records."""
    width = output_width(sys.stderr if stderr else sys.stdout)
    return Console(stderr=stderr, width=width, soft_wrap=width is not None)


def say(console: Console, text: str, style: str = "") -> None:
    """Print text literally (paths, labels and reasons are data, never markup), as one line
    whatever the width: a path stays whole, to copy or grep."""
    from ..render.grid import one_line

    console.print(Text(one_line(text), style=style), soft_wrap=True)


def command_line() -> str:
    """This command as typed, to record in a results file and to name in a lock."""
    return shlex.join(["compilescope", *sys.argv[1:]])


def stdout_output(**outputs: Path | None) -> bool:
    """Whether one of ``outputs`` (option name → path) is `-`; more than one is bad input."""
    dashes = [name for name, path in outputs.items() if path == STDOUT]
    if len(dashes) > 1:
        raise OptionError(f"only one output can be written to stdout: {' and '.join('--' + d for d in dashes)} are -")
    return bool(dashes)


_DATA_STDOUT: list[Any] = []  # stdout as it was before user_prints_to_stderr: where data still goes


@contextlib.contextmanager
def user_prints_to_stderr(stdout_is_data: bool) -> Iterator[None]:
    """While a command that writes its data to stdout runs the user's code in this process
    (a dry run, the workload's check), that code's ``print`` goes to stderr: stdout holds
    the data alone (:func:`write_text` to `-` writes to the real stdout, inside it too)."""
    if not stdout_is_data:
        yield
        return
    _DATA_STDOUT.append(sys.stdout)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _DATA_STDOUT.pop()


def shown(path: Path) -> str:
    return "stdout" if path == STDOUT else str(path)


def write_text(path: Path, text: str) -> None:
    from ..paths import write_atomic

    if path == STDOUT:
        out = _DATA_STDOUT[0] if _DATA_STDOUT else sys.stdout
        out.write(text if text.endswith("\n") else text + "\n")
        out.flush()
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except OSError as exc:
        raise OptionError(f"cannot write {path}: {exc.strerror}") from None


class Output(NamedTuple):
    """One rendered output a command writes: its path, the renderer (by name) and the option
    that asked for it (``--csv``, or ``--out`` for a path whose extension picked the renderer)."""

    path: Path
    renderer: str
    option: str


def outputs(outs: tuple[Path, ...] = (), **flags: Path | None) -> list[Output]:
    """The outputs asked for: each ``--out FILE`` by its extension (see
    :func:`compilescope.render.for_path`), and the format flags (``csv=path`` for ``--csv``),
    which are aliases of it. ``--out -`` names no format: stdout is the flags' ``-``."""
    from ..render import for_path

    chosen = [Output(path, name, f"--{name}") for name, path in flags.items() if path is not None]
    for path in outs:
        if path == STDOUT:
            raise OptionError("--out - names no format: for stdout give the format's flag, e.g. --csv - or --html -")
        chosen.append(Output(path, for_path(path).name, "--out"))
    return chosen


def results_out(chosen: list[Output], json_path: Path | None) -> tuple[list[Output], Path | None]:
    """``--out FILE.json`` of a command that writes a results JSON of its own (run, advise,
    probe) is that file, as ``--json FILE``: returned as the json path, the rest as outputs."""
    json_outs = [o for o in chosen if o.renderer == "json"]
    if len(json_outs) + (json_path is not None) > 1:
        raise OptionError("one results JSON per command: give --json FILE or one --out FILE.json")
    rest = [o for o in chosen if o.renderer != "json"]
    return rest, json_outs[0].path if json_outs else json_path


def check_kinds(chosen: list[Output], kind: type, what: str) -> None:
    """Each output's renderer renders ``kind`` (a run's file, a probe's…), else one line."""
    from ..render import get, renderers

    for o in chosen:
        if kind not in get(o.renderer).kinds:
            able = ", ".join(r.name for r in renderers() if kind in r.kinds)
            raise OptionError(f"{o.option} {shown(o.path)}: {o.renderer} output is not made for {what} "
                              f"(it writes: {able})")


def write_outputs(report: Any, chosen: list[Output]) -> list[tuple[str, Path]]:
    """Render ``report`` with each output's renderer and write it; (what, path) of each written."""
    from ..render import get

    written = []
    for o in chosen:
        renderer = get(o.renderer)
        write_text(o.path, renderer.render(report))
        written.append((renderer.written, o.path))
    return written


def show(report: Any, console: Console, chosen: list[Output]) -> None:
    """The one output path of every command: write each output, print the report, then say
    where each output went."""
    from ..render import text

    written = write_outputs(report, chosen)
    for part in text.renderables(report):
        console.print(part)
    for what, path in written:
        say(console, f"{what}: {shown(path)}")


def check_outputs(chosen: list[Output], *, others: Any = (), inputs: Any = ()) -> None:
    """Before any trial: every output path ours to write (a regular file or a new path; see
    :func:`compilescope.paths.check_output`), no two outputs on one file and none on a file the
    command reads, plotly present for an HTML output. ``others``/``inputs``: (path or None, name)."""
    from ..paths import JOURNAL_SUFFIX, LOCK_SUFFIX, check_distinct, check_output

    for o in chosen:  # a run's journal or lock, its own or another command's: its unsaved trials, its owner
        if o.path != STDOUT and o.path.name.endswith((".json" + JOURNAL_SUFFIX, ".json" + LOCK_SUFFIX)) \
                and os.path.lexists(o.path):
            raise OptionError(f"cannot write {o.option} {str(o.path)!r}: it is a run's "
                              f"{'journal' if o.path.name.endswith(JOURNAL_SUFFIX) else 'lock'}, never replaced")
    checked = [(path, what) for path, what in [*others, *((o.path, o.option) for o in chosen)] if path != STDOUT]
    for path, what in checked:
        if path is not None:
            check_output(path, what)
    check_distinct(checked, inputs)
    from ..render import get

    for o in chosen:
        get(o.renderer).check()


def stream_inputs(*specs: tuple[str | None, str]) -> list[tuple[Path, str]]:
    """The files ``@FILE`` stream specs read, as (path, option) inputs for :func:`check_outputs`:
    an output on a recording the command reads would destroy it. A spec whose syntax is wrong
    is refused here, at once (:func:`compilescope.stream.check_syntax`), not after the
    workload has loaded."""
    from ..errors import StreamError
    from ..stream import check_syntax

    found = []
    for spec, option in specs:
        try:
            if spec is not None:
                check_syntax(spec)
        except StreamError as exc:  # named by its option, but for the one every command has
            raise exc if option == "--stream" else StreamError(f"{option}: {exc}") from None
        text = (spec or "").strip()
        if text.startswith("@") and len(text) > 1:
            found.append((Path(text[1:]), f"{option} @{text[1:]}"))
    return found


def results_outputs(results: Path | None) -> list[tuple[Path | None, str]]:
    """A results file and the files a run writes beside it (journal, lock)."""
    from ..paths import results_siblings

    return [] if results is None else [(results, "results"), *results_siblings(results)]


def lock_results(results: Path) -> None:
    """Hold ``RESULT.json.lock`` until the command ends, however it ends: a second run on the
    same results file refuses at once, naming this one."""
    from ..paths import ResultsLock

    lock = ResultsLock(results, command_line())
    click.get_current_context().with_resource(lock)


def refuse_unfinished(results: Path) -> None:
    """A new run on a results path whose journal holds an interrupted run's finished trials
    would delete them: refused, naming the way to resume (called with the lock held, so the
    journal is no live run's)."""
    from ..errors import CompilescopeError
    from ..execute.journal import read_journal
    from ..paths import journal_path

    journal = journal_path(results)
    if not os.path.lexists(journal):
        return
    try:
        state = read_journal(journal)
        resumable = isinstance(state.header, dict) and "base" in state.header
    except CompilescopeError:
        resumable = False
    if resumable:
        raise OptionError(f"{journal} holds the finished trials of an interrupted run: resume it with "
                          f"compilescope run --resume {shlex.quote(str(results))}, or remove {journal} first")
    raise OptionError(f"{journal} is another command's record (a probe's journal, say) that a run here would "
                      f"replace: remove it first, or write the results elsewhere")


def results_to_stdout(json_path: Path | None, results: Path) -> None:
    """``--json -``: the results file, as written, on stdout (before anything is rendered)."""
    if json_path == STDOUT:
        try:
            text = results.read_text(encoding="utf-8")
        except OSError as exc:
            raise OptionError(f"cannot read {results}: {exc.strerror}") from None
        write_text(STDOUT, text)


INVOKED: list[str] = []  # this command's arguments (set by main), for one to run again in another interpreter


def in_interpreter(python: str) -> int:
    """This very command, less its ``--python PATH``, run by that interpreter (after it was
    checked to import torch and this compilescope); its exit status."""
    import subprocess

    from ..prepare import check_trial_interpreter

    check_trial_interpreter(python)
    args, skip = [], False
    for arg in INVOKED:
        if skip:
            skip = False
        elif arg == "--python":
            skip = True
        elif not arg.startswith("--python="):
            args.append(arg)
    return subprocess.run([python, "-m", "compilescope.cli", *args]).returncode


def refuse_given(what: str, allowed: set[str], why: str) -> None:
    """One line, exit 2, for an option given on the command line that ``what`` would ignore."""
    ctx = click.get_current_context()
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in allowed or param.name is None:
            continue
        if ctx.get_parameter_source(param.name) is click.core.ParameterSource.COMMANDLINE:
            raise OptionError(f"{param.opts[0]} cannot be combined with {what}: {why}")


def ended(out: Console, report: Any, failing: frozenset[str] = frozenset()) -> int:
    """The run command's exit status (:func:`compilescope.app.run.failure`), its reason said
    in one line when it is not 0."""
    from ..app.run import failure

    why = failure(report, failing)
    if why is None:
        return 0
    say(out, f"exit {EXIT_FAILED}: {why}", "bold red")
    return EXIT_FAILED
