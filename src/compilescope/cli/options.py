"""The options commands share, defined once: :func:`options` puts named groups of them on a
command (``@options("executor", "lifetime", "html", "measure")``), in the order named, as
``--help`` lists them; the parsers of what they hold (:class:`ExecutorChoice`,
:func:`measure`) are beside them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import OptionError
from .common import FiniteRange
from ..execute.registry import DEFAULT_EXECUTOR, EXECUTORS, Setting, executor_entry, make_executor
from ..execute.registry import settings as executor_settings  # the registries import no torch
from ..model import MeasureOptions
from ..render import renderers, writing
from ..report import ProbeFile, RunFile
from ..strategies import strategy_names

if TYPE_CHECKING:
    from ..execute.executor import Executor
    from ..execute.start import ProcessStarter

class _FormatHelp(Mapping[str, str]):
    """Each output format's words in --out's help, read from the renderer registry
    (``render/__init__.py``) when asked: the CLI starts without importing a renderer."""

    def _now(self) -> dict[str, str]:
        return {r.name: r.help for r in renderers()}

    def __getitem__(self, name: str) -> str:
        return self._now()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())


FORMAT_HELP = _FormatHelp()

EXECUTOR_OPTIONS = {"executor", *executor_settings()}

Decorator = Callable[[Any], Any]


class _OutOption(click.Option):
    """``--out``, whose help names the formats that write its command's reports, read from the
    renderer registry when the help is asked for (a format registered after the CLI was built
    is listed too)."""

    def __init__(self, *args: Any, kinds: tuple[type, ...] = (), aliases: str = "", **kwargs: Any) -> None:
        self.kinds, self.aliases = kinds, aliases
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def help(self) -> str:
        listed = ", ".join(r.help for r in writing(*self.kinds))
        return f"write an output, its format picked by the file's extension: {listed}; repeatable." + (
            f" {self.aliases} {'are' if '/' in self.aliases else 'is'} the same with the format named."
            if self.aliases else "")

    @help.setter
    def help(self, value: str | None) -> None:
        pass  # made from the registry, never stored


def outputs_option(*kinds: type, aliases: str = "") -> Decorator:
    """``--out FILE`` (repeatable), its help naming the formats that write ``kinds`` (the reports
    this command makes), as the renderer registry has them."""
    return click.option("--out", "outs", cls=_OutOption, kinds=kinds, aliases=aliases, multiple=True, metavar="FILE",
                        type=click.Path(dir_okay=False, allow_dash=True, path_type=Path))


def _html(out: Decorator) -> list[Decorator]:
    return [
        click.option("--html", "html_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
                     help="also write a self-contained HTML report with plots (needs compilescope[html]; "
                          "- for stdout)."),
        click.option("--perfetto", "perfetto_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
                     help="also write a Chrome/Perfetto trace of calls and compiles (- for stdout)."),
        out,
    ]


def _click_type(setting: Setting) -> Any:
    if setting.kind is float:
        return FiniteRange(min=setting.low, max=setting.high)
    if setting.kind is int:
        return click.IntRange(min=setting.low, max=setting.high)  # type: ignore[arg-type]
    return None


def _executor_options() -> list[Decorator]:
    """``--executor NAME`` and each executor's settings (:mod:`compilescope.execute.registry`);
    the command gets them together, as one :class:`ExecutorChoice` argument ``executor``."""
    help_text = "; ".join(f"{e.name}: {e.help}" for e in EXECUTORS.values()) + "."
    chosen = [click.option("--executor", type=click.Choice(list(EXECUTORS)), default=DEFAULT_EXECUTOR,
                           show_default=True, help=help_text)]
    for setting, owners in executor_settings().values():
        chosen.append(click.option(setting.flag, setting.name, type=_click_type(setting), default=setting.default,
                                   show_default=setting.default is not None,
                                   help=f"{'/'.join(owners)}: {setting.help}"))

    def gathered(f: Any) -> Any:
        @functools.wraps(f)
        def command(*args: Any, executor: str, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in executor_settings()}
            return f(*args, executor=ExecutorChoice(executor, given), **kwargs)
        return command

    return [*chosen, gathered]


GROUPS: dict[str, list[Decorator]] = {
    "measure": [
        click.option("--threads", type=click.IntRange(min=0, max=4096), default=1, show_default=True,
                     help="torch threads in each trial (0 = torch's default)."),
        click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True,
                     help="warm-up calls per shape before steady-state samples."),
        click.option("--samples", type=click.IntRange(min=1), default=30, show_default=True,
                     help="steady-state samples per shape (at most)."),
        click.option("--budget", type=FiniteRange(min=0), default=2.0, show_default=True,
                     help="steady-state time budget per shape, seconds (at least 5 samples)."),
        click.option("--device", default="cpu", show_default=True, help="cpu, cuda, cuda:1…"),
        click.option("--python", "python", default=None, metavar="PATH",
                     help="run the trials in this Python interpreter (another torch: its versions are recorded "
                          "in each trial; it must import this compilescope).  Default: this one."),
        click.option("--timeout", type=FiniteRange(min=1), default=900.0, show_default=True,
                     help="seconds before a trial process is killed and recorded as timed out."),
        click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
                     help="results JSON (default: compilescope-results/<workload>-<time>.json); "
                          "written as each trial finishes. -: also to stdout when the run ends, with the report "
                          "on stderr (the default file still keeps each trial as it finishes)."),
        click.option("--csv", "csv_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
                     help="write results CSV (- for stdout, with the report on stderr)."),
    ],
    "lifetime": [
        click.option("--lifetime", default=None, metavar="N|DURATION",
                     help="process lifetime for the verdict: 10000 requests, or 8h with --qps."),
        click.option("--qps", type=FiniteRange(min=0, min_open=True), default=None,
                     help="requests per second, to turn a --lifetime duration into a request count."),
    ],
    "executor": _executor_options(),  # the same for run, advise, sweep and warmup
    # a run's outputs besides its results JSON; a probe's file has no CSV form
    "html": _html(outputs_option(RunFile, ProbeFile, aliases="--json/--csv/--html/--perfetto")),
    "probe-html": _html(outputs_option(ProbeFile, aliases="--json/--html/--perfetto")),
}


def options(*groups: str) -> Decorator:
    """The one decorator of shared options: each named group of :data:`GROUPS`, listed in
    ``--help`` in the order named."""
    chosen = [option for group in groups for option in GROUPS[group]]

    def decorate(f: Any) -> Any:
        for option in reversed(chosen):
            f = option(f)
        return f
    return decorate


class ExecutorChoice:
    """The executor the options name, with its settings; checked when the command starts (a
    setting of another executor given: one line, exit 2), made (a Ray cluster joined) only once
    the rest of the input is known to be good."""

    def __init__(self, name: str, given: dict[str, Any]) -> None:
        self.name, self.entry, self.given = name, executor_entry(name), given
        self.ahead: ProcessStarter | None = None  # the trial processes started ahead (start_ahead)
        ctx = click.get_current_context()
        for setting, owners in executor_settings().values():
            if name not in owners and ctx.get_parameter_source(setting.name) is click.core.ParameterSource.COMMANDLINE:
                raise OptionError(f"{setting.flag} cannot be combined with --executor {name}: it applies to "
                                  f"--executor {' or '.join(owners)}")

    def start_ahead(self, threads: list[int | None]) -> None:
        """Where trials start as processes of this machine: start the first ones now (their
        ``--threads``, in order), importing while the driver starts up; they are ended on any
        way out, bad input included."""
        if not self.entry.local:
            return
        from ..execute.process import Launch
        from ..execute.start import default_start

        self.ahead = default_start()
        click.get_current_context().call_on_close(self.ahead.close)
        self.ahead.expect([Launch.of(t) for t in threads])

    def start(self) -> Executor:
        """The :class:`~compilescope.execute.executor.Executor`, taking the processes started
        ahead (with Ray, a trial on a CUDA device reserves one of the cluster's GPUs)."""
        return make_executor(self.name, self.given, self.ahead)


def measure(threads: int, warmup: int, samples: int, budget: float, device: str,
            python: str | None = None) -> MeasureOptions:
    import os

    return MeasureOptions(
        warmup=warmup, samples=samples, min_samples=min(5, samples), budget_s=budget,
        threads=threads or None, device=device, python=None if python is None else os.path.abspath(python),
    )


def complete_strategies(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of the last name of a comma list."""
    done, comma, last = incomplete.rpartition(",")
    given = set(done.split(",")) if comma else set()
    return [f"{done}{comma}{name}" for name in strategy_names() if name.startswith(last) and name not in given]


def _builtin_names() -> list[str]:
    """The built-in workloads' names, read from ``zoo.py``'s ``BUILTINS`` without importing it
    (it imports torch): completion answers at once."""
    import ast

    tree = ast.parse((Path(__file__).parents[1] / "zoo.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "BUILTINS" \
                and isinstance(node.value, ast.Dict):
            return [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return []


def _file_names(path: str) -> list[str]:
    """The top-level functions and names a workload file defines, read without running it."""
    import ast

    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return []
    names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    names += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def complete_workload(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
    """A built-in name, a ``file.py`` path (the shell completes it), or after ``file.py:`` the
    names the file defines."""
    from click.shell_completion import CompletionItem

    path, colon, name = incomplete.partition(":")
    if colon and path.endswith(".py"):
        return [CompletionItem(f"{path}:{n}") for n in _file_names(path) if n.startswith(name)]
    return [*(CompletionItem(n) for n in _builtin_names() if n.startswith(incomplete)),
            CompletionItem(incomplete, type="file")]


def complete_script(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
    """A script's path: the shell completes it."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]
