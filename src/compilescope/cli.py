"""Command line: ``compilescope run|demo|advise|report|compare|probe``. Bad input → one line on
stderr, exit 2; an interrupted run saves what finished and exits 128 + the signal.

Only click, rich and the torch-free modules are imported here: torch (and everything that
imports it) is imported inside the commands, so ``--help``, ``--version`` and shell completion
answer at once."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from . import __version__
from .errors import CompilescopeError, OptionError
from .model import DEFAULT_STRATEGIES, MeasureOptions, ProbeResult, RunResult, StrategyOptions, TrialResult
from .options import OBJECTIVES, parse_buckets, parse_fail_on, parse_lifetime, parse_mark
from .strategies import strategy_names  # the registry imports no torch

if TYPE_CHECKING:
    from .execute.executor import Executor

EXIT_USAGE = 2
EXIT_FAILED = 1
PIPE_WIDTH = 100  # off a terminal with no COLUMNS; tables wrap their cells to whatever width they get


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


def _console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, width=output_width(sys.stderr if stderr else sys.stdout))


def _say(console: Console, text: str, style: str = "") -> None:
    """Print text literally (paths, labels and reasons are data, never markup), as one line
    whatever the width: a path stays whole, to copy or grep."""
    console.print(Text(text, style=style), soft_wrap=True)


STDOUT = Path("-")  # an output path of `-`: written to stdout, with the human report on stderr


def _stdout_output(**outputs: Path | None) -> bool:
    """Whether one of ``outputs`` (option name → path) is `-`; more than one is bad input."""
    dashes = [name for name, path in outputs.items() if path == STDOUT]
    if len(dashes) > 1:
        raise OptionError(f"only one output can be written to stdout: {' and '.join('--' + d for d in dashes)} are -")
    return bool(dashes)


def _shown(path: Path) -> str:
    return "stdout" if path == STDOUT else str(path)


def _write_text(path: Path, text: str) -> None:
    from .paths import write_atomic

    if path == STDOUT:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    except OSError as exc:
        raise OptionError(f"cannot write {path}: {exc.strerror}") from None


def _progress_callback(progress: Progress, task: Any, console: Console) -> Any:
    from .execute.scheduler import PlannedTrial

    from .collect.graphs import eager_frames
    from .model import trial_status

    def on_progress(trial: PlannedTrial, result: TrialResult | None) -> None:
        if result is None:
            progress.update(task, description=escape(trial.label))
            return
        progress.advance(task)
        took = f" {result.process_s:.1f} s" if result.process_s is not None else ""
        status = trial_status(result.status, result.calls)  # ✓ only when no request raised
        eager = sum(1 for c in result.calls if c.ran_eagerly)
        partly = len(eager_frames(result.calls, result.compiles))
        line = Text("  ")
        if status != "ok":
            line.append(f"✗ {status}", style="red")
        elif eager or partly:  # it ran, but not all of it compiled: never a ✓
            line.append("! eager fallback", style="red")
        else:
            line.append("✓", style="green")
        line.append(f" {trial.label}{took}")
        if status != "ok" and result.error:
            line.append(f" — {result.error}", style="red")
        elif status != "ok":
            errors = sum(1 for c in result.calls if c.error is not None)
            line.append(f" — {errors} of {len(result.calls)} requests raised", style="red")
        if status == "ok" and (eager or partly):
            parts = [f"{eager} request(s) ran eagerly"] if eager else []
            parts += [f"{partly} ran partly eagerly"] if partly else []
            line.append(" — " + ", ".join(parts), style="red")
        console.print(line)

    return on_progress


def _with_progress(console: Console, total: int | None, work: Any) -> Any:
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(), console=console, transient=True,
    ) as progress:
        task = progress.add_task("starting", total=total)
        return work(_progress_callback(progress, task, console))


def _execute(args: dict[str, Any], console: Console, executor: ExecutorChoice | None = None) -> RunResult:
    from .api import execute_run
    from .prepare import prepare_run
    from .execute.scheduler import plan_trials

    _, base, names = prepare_run(
        args["workload"], args["stream"], args["strategies"], options=args["options"], measure=args["measure"],
    )
    total = len(plan_trials(base, names, args["cache"]))
    runner = executor.start() if executor else None
    _say(console, f"results: {args['results']} (each trial is saved as it finishes)", "dim")
    return _with_progress(console, total, lambda cb: execute_run(
        base, names, args["cache"], timeout_s=args["timeout"], on_progress=cb, command=args["command"],
        lifetime=args.get("lifetime"), results_path=args["results"], executor=runner,
    ))


class Output(NamedTuple):
    """One rendered output a command writes: its path, the renderer (by name) and the option
    that asked for it (``--csv``, or ``--out`` for a path whose extension picked the renderer)."""

    path: Path
    renderer: str
    option: str


def _outputs(outs: tuple[Path, ...] = (), **flags: Path | None) -> list[Output]:
    """The outputs asked for: each ``--out FILE`` by its extension (see
    :func:`compilescope.render.for_path`), and the format flags (``csv=path`` for ``--csv``),
    which are aliases of it. ``--out -`` names no format: stdout is the flags' ``-``."""
    from .render import for_path

    chosen = [Output(path, name, f"--{name}") for name, path in flags.items() if path is not None]
    for path in outs:
        if path == STDOUT:
            raise OptionError("--out - names no format: for stdout give the format's flag, e.g. --csv - or --html -")
        chosen.append(Output(path, for_path(path).name, "--out"))
    return chosen


def _results_out(outputs: list[Output], json_path: Path | None) -> tuple[list[Output], Path | None]:
    """``--out FILE.json`` of a command that writes a results JSON of its own (run, advise,
    probe) is that file, as ``--json FILE``: returned as the json path, the rest as outputs."""
    json_outs = [o for o in outputs if o.renderer == "json"]
    if len(json_outs) + (json_path is not None) > 1:
        raise OptionError("one results JSON per command: give --json FILE or one --out FILE.json")
    rest = [o for o in outputs if o.renderer != "json"]
    return rest, json_outs[0].path if json_outs else json_path


def _check_kinds(outputs: list[Output], kind: type, what: str) -> None:
    """Each output's renderer renders ``kind`` (a run's file, a probe's…), else one line."""
    from .render import get, renderers

    for o in outputs:
        if kind not in get(o.renderer).kinds:
            able = ", ".join(r.name for r in renderers() if kind in r.kinds)
            raise OptionError(f"{o.option} {_shown(o.path)}: {o.renderer} output is not made for {what} "
                              f"(it writes: {able})")


def _write_outputs(report: Any, outputs: list[Output]) -> list[tuple[str, Path]]:
    """Render ``report`` with each output's renderer and write it; (what, path) of each written."""
    from .render import get

    written = []
    for o in outputs:
        renderer = get(o.renderer)
        _write_text(o.path, renderer.render(report))
        written.append((renderer.written, o.path))
    return written


def _show(report: Any, console: Console, outputs: list[Output]) -> None:
    """The one output path of every command: write each output, print the report, then say
    where each output went."""
    from .render import text

    written = _write_outputs(report, outputs)
    for part in text.renderables(report):
        console.print(part)
    for what, path in written:
        _say(console, f"{what}: {_shown(path)}")


def _report_run(result: RunResult, console: Console, outputs: list[Output], advice: Any = None) -> Any:
    """Render a run whose records are already on disk (an advise run's advice after its
    report: ``advice``, or judged again from the records); returns the report model."""
    import dataclasses

    from .analysis.outputs import run_file

    file = run_file(result)
    if advice is not None:
        file = dataclasses.replace(file, advice=advice)
    _show(file, console, outputs)
    return file.report


def _check_outputs(outputs: list[Output], *, others: Any = (), inputs: Any = ()) -> None:
    """Before any trial: every output path ours to write (a regular file or a new path; see
    :func:`compilescope.paths.check_output`), no two outputs on one file and none on a file the
    command reads, plotly present for an HTML output. ``others``/``inputs``: (path or None, name)."""
    from .paths import check_distinct, check_output

    checked = [(path, what) for path, what in [*others, *((o.path, o.option) for o in outputs)] if path != STDOUT]
    for path, what in checked:
        if path is not None:
            check_output(path, what)
    check_distinct(checked, inputs)
    if any(o.renderer == "html" for o in outputs):
        from .render.html import require_plotly

        require_plotly()


def _stream_inputs(*specs: tuple[str | None, str]) -> list[tuple[Path, str]]:
    """The files ``@FILE`` stream specs read, as (path, option) inputs for :func:`_check_outputs`:
    an output on a recording the command reads would destroy it."""
    found = []
    for spec, option in specs:
        text = (spec or "").strip()
        if text.startswith("@") and len(text) > 1:
            found.append((Path(text[1:]), f"{option} @{text[1:]}"))
    return found


def _results_outputs(results: Path | None) -> list[tuple[Path | None, str]]:
    """A results file and the files a run writes beside it (journal, lock)."""
    from .paths import results_siblings

    return [] if results is None else [(results, "results"), *results_siblings(results)]


def _lock_results(results: Path) -> None:
    """Hold ``RESULT.json.lock`` until the command ends, however it ends: a second run on the
    same results file refuses at once, naming this one."""
    from .paths import ResultsLock

    lock = ResultsLock(results, shlex.join(["compilescope", *sys.argv[1:]]))
    click.get_current_context().with_resource(lock)


FORMAT_HELP = {"json": ".json (results)", "csv": ".csv", "html": ".html",
               "perfetto": ".perfetto.json or .trace.json (Chrome/Perfetto trace)",
               "text": ".txt (the report as plain text)"}


def outputs_option(*formats: str, aliases: str = "") -> Any:
    """``--out FILE`` (repeatable), its help naming the formats this command writes."""
    listed = ", ".join(FORMAT_HELP[f] for f in formats)
    text = f"write an output, its format picked by the file's extension: {listed}; repeatable." + (
        f" {aliases} {'are' if '/' in aliases else 'is'} the same with the format named." if aliases else "")
    return click.option("--out", "outs", multiple=True, metavar="FILE",
                        type=click.Path(dir_okay=False, allow_dash=True, path_type=Path), help=text)


out_option = outputs_option(*FORMAT_HELP, aliases="--json/--csv/--html/--perfetto")


def html_options(f: Any, out: Any = out_option) -> Any:
    f = out(f)
    f = click.option("--perfetto", "perfetto_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
                     help="also write a Chrome/Perfetto trace of calls and compiles (- for stdout).")(f)
    return click.option("--html", "html_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
                        help="also write a self-contained HTML report with plots (needs compilescope[html]; "
                             "- for stdout).")(f)


def probe_html_options(f: Any) -> Any:
    """:func:`html_options` for a probe, whose file has no CSV form."""
    return html_options(f, out=outputs_option("json", "html", "perfetto", "text", aliases="--json/--html/--perfetto"))


def _exit_status(report: Any, fail_on: frozenset[str]) -> int:
    """1 when every compiled trial failed (a trial whose every request raised included), and
    under ``--fail-on``: crash (a trial failed or timed out, or any request raised), numerics,
    fallback (a request ran eagerly, wholly or partly)."""
    compiled = [t for t in report.trials if t.compiles_code and t.status != "unavailable"]
    if compiled and all(t.status not in ("ok", "partial") for t in compiled):
        return EXIT_FAILED
    if "crash" in fail_on and any(t.status in ("failed", "timeout", "partial") or t.call_errors
                                  for t in report.trials):
        return EXIT_FAILED
    if "numerics" in fail_on and any(t.numerics_failed for t in report.trials):
        return EXIT_FAILED
    if "fallback" in fail_on and any(t.fallbacks or t.partial_fallbacks for t in report.trials):
        return EXIT_FAILED
    return 0


def _refuse_given(what: str, allowed: set[str], why: str) -> None:
    """One line, exit 2, for an option given on the command line that ``what`` would ignore."""
    ctx = click.get_current_context()
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in allowed or param.name is None:
            continue
        if ctx.get_parameter_source(param.name) is click.core.ParameterSource.COMMANDLINE:
            raise OptionError(f"{param.opts[0]} cannot be combined with {what}: {why}")


RAY_OPTIONS = {"ray_address", "cpus_per_trial", "ray_timeout"}
EXECUTOR_OPTIONS = {"executor", *RAY_OPTIONS}
# what --resume still takes: the journal holds the run (workload, stream, strategies, options)
RESUME_OPTIONS = {"resume_path", "csv_path", "html_path", "perfetto_path", "outs", "fail_on", *EXECUTOR_OPTIONS}
# what run --advise uses (it runs the default and its own proposals, not a strategy matrix)
ADVISE_OPTIONS = {"advise_flag", "stream", "backend", "mode", "lifetime", "qps", "threads", "warmup", "samples",
                  "budget", "device", "python", "timeout", "json_path", "csv_path", "html_path", "perfetto_path",
                  "outs", *EXECUTOR_OPTIONS}


def measure_options(f: Any) -> Any:
    options = [
        click.option("--threads", type=click.IntRange(min=0), default=1, show_default=True,
                     help="torch threads in each trial (0 = torch's default)."),
        click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True,
                     help="warm-up calls per shape before steady-state samples."),
        click.option("--samples", type=click.IntRange(min=1), default=30, show_default=True,
                     help="steady-state samples per shape (at most)."),
        click.option("--budget", type=click.FloatRange(min=0), default=2.0, show_default=True,
                     help="steady-state time budget per shape, seconds (at least 5 samples)."),
        click.option("--device", default="cpu", show_default=True, help="cpu, cuda, cuda:1…"),
        click.option("--python", "python", default=None, metavar="PATH",
                     help="run the trials in this Python interpreter (another torch: its versions are recorded "
                          "in each trial; it must import this compilescope).  Default: this one."),
        click.option("--timeout", type=click.FloatRange(min=1), default=900.0, show_default=True,
                     help="seconds before a trial process is killed and recorded as timed out."),
        click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
                     help="results JSON (default: compilescope-results/<workload>-<time>.json); "
                          "written as each trial finishes. -: also to stdout when the run ends, with the report "
                          "on stderr (the default file still keeps each trial as it finishes)."),
        click.option("--csv", "csv_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
                     help="write results CSV (- for stdout, with the report on stderr)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def lifetime_options(f: Any) -> Any:
    f = click.option("--qps", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="requests per second, to turn a --lifetime duration into a request count.")(f)
    return click.option("--lifetime", default=None, metavar="N|DURATION",
                        help="process lifetime for the verdict: 10000 requests, or 8h with --qps.")(f)


def executor_options(f: Any) -> Any:
    """``--executor local|ray`` and the Ray options, the same for run, advise and sweep."""
    options = [
        click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                     help="local: one fresh subprocess at a time; ray: each trial a Ray task in a fresh worker "
                          "process."),
        click.option("--ray-address", default=None,
                     help="the Ray cluster to join (default: RAY_ADDRESS, else a local one)."),
        click.option("--cpus-per-trial", type=click.FloatRange(min=0.1), default=1.0, show_default=True,
                     help="ray: CPUs each trial reserves (trials run concurrently as the cluster's CPUs allow)."),
        click.option("--ray-timeout", type=click.FloatRange(min=0.1, max=3600), default=30.0, show_default=True,
                     help="ray: seconds to wait for the cluster to answer before giving up."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


class ExecutorChoice:
    """The executor the options name; checked when the command starts, started (a Ray cluster
    joined) only once the rest of the input is known to be good."""

    def __init__(self, executor: str, ray_address: str | None, cpus_per_trial: float, ray_timeout: float) -> None:
        if executor != "ray":
            ctx = click.get_current_context()
            _refuse_given(f"--executor {executor}", {p.name or "" for p in ctx.command.params} - RAY_OPTIONS,
                          "it applies to --executor ray")
        self.name, self.address, self.cpus, self.timeout = executor, ray_address, cpus_per_trial, ray_timeout

    def start(self) -> Executor:
        """An :class:`~compilescope.execute.executor.Executor` (with Ray, a trial on a CUDA
        device reserves one of the cluster's GPUs)."""
        if self.name != "ray":
            from .execute.local import LocalExecutor

            return LocalExecutor()
        from .execute.ray_executor import RayExecutor

        return RayExecutor(self.address, cpus_per_trial=self.cpus, connect_timeout_s=self.timeout)


def _measure(threads: int, warmup: int, samples: int, budget: float, device: str,
             python: str | None = None) -> MeasureOptions:
    return MeasureOptions(
        warmup=warmup, samples=samples, min_samples=min(5, samples), budget_s=budget,
        threads=threads or None, device=device, python=None if python is None else os.path.abspath(python),
    )


def _version_message() -> str:
    """``compilescope X (torch Y, python Z)``, from package metadata: torch is not imported."""
    import platform
    from importlib import metadata

    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = "not installed"
    return f"compilescope {__version__} (torch {torch}, python {platform.python_version()})"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(_version_message())
        ctx.exit()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="print compilescope's version (and torch's and python's) and exit.")
def cli() -> None:
    """Measure what torch.compile costs and gains on your workload across input shapes."""


def _complete_strategies(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of the last name of a comma list."""
    done, comma, last = incomplete.rpartition(",")
    given = set(done.split(",")) if comma else set()
    return [f"{done}{comma}{name}" for name in strategy_names() if name.startswith(last) and name not in given]


@cli.command("run")
@click.argument("workload", required=False)
@click.option("--stream", help="shapes: 16,32,64 | batch=4,seq=32;… | product:… | random:… | @file.jsonl")
@click.option("--strategies", default=",".join(DEFAULT_STRATEGIES), show_default=True,
              shell_complete=_complete_strategies, help=f"comma list of: {', '.join(strategy_names())}.")
@click.option("--cache", default="cold", show_default=True, metavar="MODES",
              help="start modes, comma list: cold (empty cache dir), warm (dir populated by the same strategy), "
                   "mega (empty dir + torch.compiler.load_cache_artifacts); both = cold,warm; all.")
@click.option("--backend", default="inductor", show_default=True)
@click.option("--mode", default=None, help="torch.compile mode (inductor), e.g. max-autotune-no-cudagraphs.")
@click.option("--mark", "marks", multiple=True, metavar="INPUT:DIM[:MIN:MAX]",
              help="mark-dynamic / shapes-spec: this input dim is dynamic (repeatable).")
@click.option("--dynamic-sources", default=None, metavar="SOURCES",
              help="dynamic-sources: e.g. \"L['x'],L['y']:0\" (exact names or regexes, optional :dim).")
@click.option("--block", default=None, metavar="CLASS",
              help="regional / nested: the repeated submodule class (default: the most repeated one).")
@click.option("--buckets", default="pow2", show_default=True, help="bucket: pow2 or ascending sizes 16,32,64.")
@click.option("--recompile-limit", type=click.IntRange(min=1), default=None,
              help="recompile limit for every compiled strategy (torch's default is 8).")
@click.option("--resume", "resume_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="finish an interrupted run: re-run only the trials missing from RESULT.json's journal.")
@click.option("--advise", "advise_flag", is_flag=True,
              help="instead of the strategy matrix: run the default, propose a fix for each recompile cause, "
                   "measure every proposal and recommend (as `compilescope advise`).")
@click.option("--fail-on", default=None, metavar="WHAT",
              help="exit 1 when any trial shows: crash, numerics, fallback (comma list). "
                   "Exit 1 always when every compiled trial failed.")
@executor_options
@lifetime_options
@html_options
@measure_options
def run_command(workload: str | None, stream: str | None, strategies: str, cache: str, backend: str,
                mode: str | None, marks: tuple[str, ...], dynamic_sources: str | None, block: str | None,
                buckets: str, recompile_limit: int | None, resume_path: Path | None, advise_flag: bool,
                fail_on: str | None, executor: str, ray_address: str | None, cpus_per_trial: float,
                ray_timeout: float,
                lifetime: str | None, qps: float | None, html_path: Path | None, perfetto_path: Path | None,
                outs: tuple[Path, ...], threads: int, warmup: int, samples: int, budget: float,
                device: str, python: str | None, timeout: float, json_path: Path | None, csv_path: Path | None) -> int:
    """Run WORKLOAD (file.py:name, package.module:name or a built-in) over a shape stream."""
    if workload is not None and resume_path is None and not advise_flag:
        from .execute.local import AHEAD, start_ahead

        # importing while the driver starts (not in an interpreter not yet checked)
        start_ahead([threads or None] * (strategies.count(",") + 2) if python is None else [])
        click.get_current_context().call_on_close(AHEAD.close)  # ended on any way out, bad input included
    from .api import default_results_path, resume_run
    from .options import check_writable
    from .report import RunFile

    console = _console(stderr=_stdout_output(json=json_path, csv=csv_path, html=html_path, perfetto=perfetto_path))
    outputs, json_path = _results_out(_outputs(outs, csv=csv_path, html=html_path, perfetto=perfetto_path), json_path)
    _check_kinds(outputs, RunFile, "a run")
    failing = parse_fail_on(fail_on)
    if resume_path is not None:
        if workload is not None:
            raise click.UsageError("--resume takes the results file; give no WORKLOAD")
        _refuse_given("--resume", RESUME_OPTIONS, "the run resumes as its journal describes it (start a new run "
                      "to change it)")
    if advise_flag:
        _refuse_given("--advise", ADVISE_OPTIONS, "advise runs the default strategy and its own proposals")
    runner = ExecutorChoice(executor, ray_address, cpus_per_trial, ray_timeout)
    if qps is not None and lifetime is None:
        raise OptionError("--qps turns a --lifetime duration into requests: give --lifetime (e.g. 8h) too")
    _check_outputs(outputs, others=_results_outputs(resume_path or (None if json_path == STDOUT else json_path)),
                   inputs=_stream_inputs((stream, "--stream")))
    if resume_path is not None:
        _lock_results(resume_path)
        _say(console, f"resuming {resume_path}", "dim")
        started = runner.start()
        result = _with_progress(console, None, lambda cb: resume_run(resume_path, on_progress=cb, executor=started))
        _say(console, f"results: {resume_path}")
        _results_to_stdout(json_path, resume_path)
        return _exit_status(_report_run(result, console, outputs), failing)
    if workload is None:
        raise click.UsageError("give a WORKLOAD (or --resume RESULT.json)")
    if advise_flag:
        return _advise(console, workload, stream, backend, mode, "total", parse_lifetime(lifetime, qps),
                       _measure(threads, warmup, samples, budget, device, python), timeout, json_path, outputs,
                       executor=runner)
    options = StrategyOptions(
        backend=backend, mode=mode, marks=tuple(parse_mark(m) for m in marks), recompile_limit=recompile_limit,
        dynamic_sources=dynamic_sources, block=block, buckets=parse_buckets(buckets),
    )
    results = json_path if json_path not in (None, STDOUT) else default_results_path(workload)
    check_writable(results, "results")
    _lock_results(results)
    args = dict(
        workload=workload, stream=stream, strategies=strategies, cache=cache, options=options,
        measure=_measure(threads, warmup, samples, budget, device, python), timeout=timeout,
        command=shlex.join(["compilescope", *sys.argv[1:]]), lifetime=parse_lifetime(lifetime, qps),
        results=results,
    )
    result = _execute(args, console, runner)
    _say(console, f"results: {results}")
    _results_to_stdout(json_path, results)
    return _exit_status(_report_run(result, console, outputs), failing)


def _results_to_stdout(json_path: Path | None, results: Path) -> None:
    """``--json -``: the results file, as written, on stdout (before anything is rendered)."""
    if json_path == STDOUT:
        try:
            text = results.read_text(encoding="utf-8")
        except OSError as exc:
            raise OptionError(f"cannot read {results}: {exc.strerror}") from None
        _write_text(STDOUT, text)


@cli.command("demo")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("compilescope-results"),
              show_default=True, help="directory for demo.json, demo.csv and demo.html (here --out is a directory, "
                                      "not an output file as for the other commands).")
@click.option("--workload", default="transformer", show_default=True, help="built-in workload to run.")
@click.option("--lifetime", default="100000", show_default=True, metavar="N|DURATION",
              help="process lifetime for the verdict (requests, or a duration with --qps).")
@click.option("--qps", type=click.FloatRange(min=0, min_open=True), default=None)
def demo_command(out: Path, workload: str, lifetime: str, qps: float | None) -> int:
    """The main job on a built-in workload: eager vs default/static/dynamic with inductor."""
    from .options import check_writable

    console = _console()
    requests = parse_lifetime(lifetime, qps)
    check_writable(out / "demo.json", "results")
    check_writable(out / "demo.csv", "csv")
    html_path: Path | None = out / "demo.html"
    try:
        from .render.html import require_plotly

        require_plotly()
    except OptionError:
        html_path = None  # plotly absent: the demo still runs, without the HTML report
    if html_path is not None:
        check_writable(html_path, "html report")
    _lock_results(out / "demo.json")
    intro = Text("compilescope demo", style="bold")
    intro.append(f": built-in workload {workload!r}, inductor, cold cache, one fresh process per trial, "
                 f"verdict over {requests:,} requests")
    console.print(intro)
    args = dict(
        workload=workload, stream=None, strategies=",".join(DEFAULT_STRATEGIES), cache="cold",
        options=StrategyOptions(backend="inductor"), measure=_measure(1, 3, 100, 1.0, "cpu"), timeout=900.0,
        command="compilescope demo", lifetime=requests, results=out / "demo.json",
    )
    result = _execute(args, console)
    _say(console, f"results: {out / 'demo.json'}")
    outputs = [Output(out / "demo.csv", "csv", "csv")]
    if html_path is not None:
        outputs.append(Output(html_path, "html", "html report"))
    return _exit_status(_report_run(result, console, outputs), frozenset())


@cli.command("advise", context_settings={"ignore_unknown_options": True})
@click.argument("workload", required=False)
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--script", "script", is_flag=True,
              help="WORKLOAD is a script to run unmodified (its arguments follow it; put them after -- when "
                   "they share a name with an advise option): re-run it under each setting-only fix.")
@click.option("--max-waste", type=click.FloatRange(min=0, max=0.9), default=0.125, show_default=True,
              help="buckets from the observed distribution: the most mean padding waste allowed.")
@click.option("--stream", help="shapes, as for run.")
@click.option("--backend", default="inductor", show_default=True)
@click.option("--mode", default=None, help="torch.compile mode (inductor).")
@click.option("--objective", type=click.Choice(OBJECTIVES), default="total", show_default=True,
              help="total: stream wall time plus the rest of --lifetime at the steady mean; p99: the stream's p99 "
                   "latency; steady: the steady mean per request.")
@executor_options
@lifetime_options
@html_options
@measure_options
def advise_command(workload: str | None, script_args: tuple[str, ...], script: bool, max_waste: float,
                   stream: str | None, backend: str, mode: str | None, objective: str,
                   executor: str, ray_address: str | None, cpus_per_trial: float, ray_timeout: float,
                   lifetime: str | None, qps: float | None, html_path: Path | None, perfetto_path: Path | None,
                   outs: tuple[Path, ...], threads: int, warmup: int, samples: int, budget: float, device: str,
                   python: str | None, timeout: float, json_path: Path | None, csv_path: Path | None) -> int:
    """Run the default strategy, propose the narrowest fix for each recompile cause, measure every
    proposal in the same run, and recommend only what measured better. With --script, WORKLOAD is
    a script re-run unmodified under each fix a setting can apply."""
    if workload is None:
        raise click.UsageError("give a WORKLOAD, or --script SCRIPT [ARGS…]")
    if script:
        _refuse_given("--script", {"script", "timeout", "json_path"},
                      "the script runs unmodified under each setting-only fix (its own options go after --)")
        return _advise_script(workload, list(script_args), timeout, json_path)
    if script_args:
        raise click.UsageError(f"unexpected argument {script_args[0]!r} (arguments follow a script: --script)")
    runner = ExecutorChoice(executor, ray_address, cpus_per_trial, ray_timeout)
    if qps is not None and lifetime is None:
        raise OptionError("--qps turns a --lifetime duration into requests: give --lifetime (e.g. 8h) too")
    from .report import RunFile

    console = _console(stderr=_stdout_output(json=json_path, csv=csv_path, html=html_path, perfetto=perfetto_path))
    outputs, json_path = _results_out(_outputs(outs, csv=csv_path, html=html_path, perfetto=perfetto_path), json_path)
    _check_kinds(outputs, RunFile, "an advise run")
    return _advise(console, workload, stream, backend, mode, objective, parse_lifetime(lifetime, qps),
                   _measure(threads, warmup, samples, budget, device, python), timeout, json_path, outputs, max_waste,
                   executor=runner)


def _advise_script(script: str, args: list[str], timeout: float, json_path: Path | None) -> int:
    from .api import default_results_path
    from .options import check_writable
    from .render import console as console_render
    from .schema import to_data
    from .script_advise import advise_script

    console = _console(stderr=json_path == STDOUT)
    results = json_path or default_results_path(f"{Path(script).stem}-advise")
    if results != STDOUT:
        check_writable(results, "results")
        _check_outputs([], others=[(results, "results")], inputs=[(script, "the script")])
        _lock_results(results)
    _say(console, "each run: the script in a fresh process, under probe, with an empty inductor cache", "dim")
    advice = advise_script(script, args, timeout_s=timeout,
                           on_progress=lambda label: _say(console, f"running: {label}", "dim"))
    from .model import SCHEMA_VERSION

    record = {"schema_version": SCHEMA_VERSION, "kind": "advise-script", **to_data(advice)}
    _write_text(results, json.dumps(record, indent=1))  # before rendering
    _say(console, f"results: {_shown(results)}", "dim")
    for part in console_render.script_advice_renderables(advice):
        console.print(part)
    return 0


def _advise(console: Console, workload: str, stream: str | None, backend: str, mode: str | None, objective: str,
            lifetime: int | None, measure: MeasureOptions, timeout: float, json_path: Path | None,
            outputs: list[Output], max_waste: float = 0.125, *, executor: ExecutorChoice) -> int:
    from .api import advise, default_results_path
    from .prepare import prepare_run
    from .options import check_writable

    results = json_path if json_path not in (None, STDOUT) else default_results_path(workload)
    check_writable(results, "results")
    _check_outputs(outputs, others=_results_outputs(results), inputs=_stream_inputs((stream, "--stream")))
    _lock_results(results)
    if executor.name == "ray":  # the workload checked before a cluster is joined
        prepare_run(workload, stream, ("eager", "default"), options=StrategyOptions(backend=backend, mode=mode),
                    measure=measure)
    runner = executor.start()
    command = shlex.join(["compilescope", *sys.argv[1:]])
    _say(console, f"results: {results} (default first, then each proposal, one fresh process per trial)", "dim")
    result, advice = _with_progress(console, None, lambda cb: advise(
        workload, stream, backend=backend, mode=mode, measure=measure, timeout_s=timeout,
        lifetime=lifetime, objective=objective, on_progress=cb, results_path=results, command=command,
        max_waste=max_waste, executor=runner))
    _results_to_stdout(json_path, results)
    return _exit_status(_report_run(result, console, outputs, advice), frozenset())


@cli.command("report")
@click.argument("result", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path),
              help="read the trials from a results store (sweep) instead of a results JSON.")
@click.option("--where", "where", multiple=True, metavar="COLUMN=VALUE",
              help="with --store: only trials matching (workload, strategy, label, cache, backend, status, torch, "
                   "host, device, sweep); repeatable.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="also write CSV (runs; - for stdout, with the report on stderr).")
@html_options
@lifetime_options
def report_command(result: Path | None, store_path: Path | None, where: tuple[str, ...], csv_path: Path | None,
                   html_path: Path | None, perfetto_path: Path | None, outs: tuple[Path, ...], lifetime: str | None,
                   qps: float | None) -> None:
    """Print the report of a results JSON written by run, demo, advise or probe (an advise run's
    advice included), or of the runs in a results store (one report per workload, stream,
    backend and torch version)."""
    import dataclasses

    from .analysis.outputs import probe_file
    from .report import ProbeFile, RunFile
    from .schema import load

    console = _console(stderr=_stdout_output(csv=csv_path, html=html_path, perfetto=perfetto_path))
    outputs = _outputs(outs, csv=csv_path, html=html_path, perfetto=perfetto_path)
    _check_outputs(outputs, inputs=[(result, "the results file"), (store_path, "--store")])
    if (result is None) == (store_path is None):
        raise click.UsageError("give a RESULT file or --store PATH (one of them)")
    if store_path is not None:
        for run in _store_runs(store_path, where):
            if lifetime is not None:
                run = dataclasses.replace(run, lifetime=parse_lifetime(lifetime, qps))
            _say(console, f"{run.workload}: {len(run.trials)} trial(s) from {store_path}", "bold")
            _report_run(run, console, outputs)
        return
    assert result is not None
    loaded = load(result)
    if isinstance(loaded, ProbeResult):
        if csv_path is not None or lifetime is not None:
            raise OptionError("--csv and --lifetime apply to run results, not a probe's")
        _check_kinds(outputs, ProbeFile, "a probe")
        _show(probe_file(loaded), console, outputs)
        return
    _check_kinds(outputs, RunFile, "a run")
    if lifetime is not None:
        loaded = dataclasses.replace(loaded, lifetime=parse_lifetime(lifetime, qps))
    _report_run(loaded, console, outputs)  # a run made by advise: its advice again, judged from the records


def _store_runs(path: Path, where: tuple[str, ...] | list[str]) -> list[RunResult]:
    from .paths import check_input
    from .options import parse_where
    from .store import Store

    check_input(path, f"results store {str(path)!r}", OptionError)
    with Store(path, readonly=True) as store:
        runs = store.runs(parse_where(where))
    if not runs:
        raise OptionError(f"no trials in {path} match {', '.join(where) or 'anything'}")
    return runs


@cli.command("sweep")
@click.argument("sweep_file", type=click.Path(dir_okay=False, path_type=Path))
@executor_options
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="the SQLite results store [default: compilescope-results/sweep-NAME.sqlite].")
def sweep_command(sweep_file: Path, executor: str, ray_address: str | None, cpus_per_trial: float,
                  ray_timeout: float, store_path: Path | None) -> int:
    """Run SWEEP_FILE's workloads × strategies × start modes × settings; each finished trial is
    stored at once, and a sweep run again runs only the trials its store lacks."""
    from .options import check_writable, load_sweep
    from .store import Store
    from .execute.local import Interrupted
    from .sweep import default_store_path, plan_sweep, run_sweep
    from .units import fmt_time

    console = _console()
    choice = ExecutorChoice(executor, ray_address, cpus_per_trial, ray_timeout)
    config = load_sweep(sweep_file)
    store_path = store_path or default_store_path(config.name)
    check_writable(store_path, "results store")
    _check_outputs([], others=[(store_path, "--store")], inputs=[(sweep_file, "the sweep file")])
    store = Store(store_path)  # a damaged or locked store is refused before the first trial
    click.get_current_context().call_on_close(store.close)
    store.finished_keys()
    plan = plan_sweep(config)
    runner = choice.start()
    parallel = runner.capabilities.slots

    def event(progress: Any, trial: Any, result: Any) -> None:
        if result is None:
            return
        left = progress.left_s(parallel)
        status = Text(f"[{progress.done}/{progress.total} done · {progress.running} running · "
                      f"{progress.failed} failed" + (f" · ~{fmt_time(left)} left" if left else "") + "] ", "dim")
        status.append(f"{trial.spec.workload} {trial.label} ")
        status.append(result.status, "green" if result.status == "ok" else "red")
        if result.error:
            status.append(f": {result.error}")
        console.print(status)

    with store:
        _say(console, f"sweep {config.name}: {len(plan)} planned trial(s), executor {executor}, store {store_path}",
             "dim")
        try:
            progress = run_sweep(config, plan, runner, store, on_event=event)
        except (Interrupted, KeyboardInterrupt):
            click.echo(f"compilescope: every finished trial is in {store_path}; run the same command again to run "
                       "only the rest", err=True)
            raise
        if progress.skipped:
            _say(console, f"{progress.skipped} trial(s) already in the store were skipped", "dim")
        for warning in store.warnings:
            _say(console, f"! {warning}", "yellow")
        runs = store.runs([("sweep", config.name)])
    from .analysis.build import build_run_report
    from .render.console import summary_table

    for run in runs:
        _say(console, f"{run.workload} (backend {run.trials[0].spec.options.backend})", "bold")
        console.print(summary_table(build_run_report(run)))
    _say(console, f"store: {store_path} (compilescope report --store {store_path} --where workload=…)")
    return EXIT_FAILED if progress.failed and progress.failed == progress.done else 0


@cli.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path),
              help="A and B are --where filters (COLUMN=VALUE,…) selecting one run each from this results store.")
@click.option("--pair-by", type=click.Choice(["label", "strategy"]), default="label", show_default=True,
              help="pair trials by label (strategy and start mode), or by strategy alone: default (cold) with "
                   "default (warm).")
@click.option("--fail-on-regression", default=None, metavar="PCT",
              help="exit 1 when a flagged regression is beyond PCT (e.g. 5%); a failed trial or new request "
                   "errors always are.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="also write a side-by-side HTML page (needs compilescope[html]).")
@outputs_option("html", "text", aliases="--html")
def compare_command(a: str, b: str, store_path: Path | None, pair_by: str, fail_on_regression: str | None,
                    html_path: Path | None, outs: tuple[Path, ...]) -> int:
    """Compare two run results of one workload and stream (A the baseline): status, request
    errors, eager fallbacks, compiles, compile time, first call and speedup per trial and
    shape, flagged only beyond the noise."""
    from .analysis.compare import compare_runs
    from .options import parse_threshold
    from .report import CompareReport
    from .schema import load

    threshold = parse_threshold(fail_on_regression) if fail_on_regression is not None else None
    outputs = _outputs(outs, html=html_path)
    _check_kinds(outputs, CompareReport, "a comparison")
    _check_outputs(outputs, inputs=[(store_path, "--store")] if store_path is not None else
                   [(Path(a), "A"), (Path(b), "B")])
    runs = []
    for path in (a, b):
        if store_path is not None:
            found = _store_runs(store_path, (path,))
            if len(found) != 1:
                raise OptionError(f"--where {path!r} selects {len(found)} runs in {store_path}; narrow it to one "
                                  "(e.g. add workload=…, backend=…, torch=…)")
            runs.append(found[0])
            continue
        got = load(Path(path))
        if not isinstance(got, RunResult):
            raise OptionError(f"{path} is a probe result; compare takes two run results")
        runs.append(got)
    report = compare_runs(runs[0], runs[1], str(a), str(b), pair_by=pair_by)
    _show(report, _console(stderr=_stdout_output(html=html_path)), outputs)
    if threshold is not None and report.regressions_beyond(threshold):
        return EXIT_FAILED
    return 0


@cli.command("probe", context_settings={"allow_interspersed_args": False})
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="write the probe JSON.")
@click.option("--stream-out", type=click.Path(dir_okay=False, path_type=Path),
              help="write the input shapes seen as a stream for `run --stream @FILE`.")
@click.option("--record-shapes", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write every compiled call's input shapes, dtypes and scalars (the script's main thread) "
                   "as a stream; one file per compiled function when there are several.")
@click.option("--trace", "trace_dir", type=click.Path(path_type=Path), help="read a TORCH_TRACE directory instead.")
@click.option("--strict", is_flag=True, help="with --trace: fail when any event was unknown or malformed.")
@click.option("--config", "settings", multiple=True, metavar="NAME=VALUE",
              help="run the script with a setting applied (repeatable): dynamic_sources, recompile_limit, "
                   "automatic_dynamic_shapes, assume_static_by_default, inductor.NAME; VALUE is JSON or text.")
@probe_html_options
@click.argument("script", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def probe_command(json_path: Path | None, stream_out: Path | None, record_shapes: Path | None,
                  trace_dir: Path | None, strict: bool, settings: tuple[str, ...], html_path: Path | None,
                  perfetto_path: Path | None, outs: tuple[Path, ...], script: str | None,
                  args: tuple[str, ...]) -> int:
    """Run SCRIPT ARGS… as `python SCRIPT ARGS…` would and explain every compile, recompile and
    graph break; or read an existing TORCH_TRACE directory with --trace. Probe options go
    before SCRIPT (`--` ends them); every argument after SCRIPT is the script's. The report
    goes to stderr; the exit status (or the signal that ended it) is the script's."""
    from .analysis.build import probe_stream
    from .analysis.outputs import probe_file
    from .options import check_writable, parse_probe_settings
    from .probe.trace import read_trace
    from .render import json as json_render
    from .report import ProbeFile

    if (script is None) == (trace_dir is None):
        raise click.UsageError("give a SCRIPT to run or --trace DIR (one of them)")
    outputs, json_path = _results_out(_outputs(outs, html=html_path, perfetto=perfetto_path), json_path)
    _check_kinds(outputs, ProbeFile, "a probe")
    if record_shapes is not None:
        from .shapes_record import ShapeRecorder

        if trace_dir is not None:
            raise OptionError("--record-shapes records a running script, not a --trace directory")
        if record_shapes == STDOUT:
            raise OptionError("--record-shapes cannot be `-`: stdout is the script's (and several functions "
                              "make several files); give a path")
        ShapeRecorder(record_shapes)  # a bad path is an error before the script starts
    if STDOUT in (json_path, stream_out, html_path, perfetto_path) and trace_dir is None:
        raise OptionError("probe's outputs cannot be `-`: stdout is the script's; give a file")
    _stdout_output(json=json_path, **{"stream-out": stream_out}, html=html_path, perfetto=perfetto_path)
    for path, what in ((json_path, "probe JSON"), (stream_out, "shape stream")):
        if path not in (None, STDOUT):
            check_writable(path, what)
    _check_outputs(outputs, others=[(json_path, "--json"), (stream_out, "--stream-out"),
                                    (record_shapes, "--record-shapes")],
                   inputs=[(script, "the script")])
    returncode = 0
    journal: Path | None = None
    if trace_dir is not None:
        result = read_trace(trace_dir, strict=strict)
    else:
        assert script is not None
        if not Path(script).is_file():
            raise CompilescopeError(f"script {script!r} does not exist")
        config = parse_probe_settings(settings)
        journal = _probe_journal(json_path)
        read = False
        try:
            from .probe.launch import probe_result, run_probed

            returncode = run_probed(script, list(args), config, journal, _IGNORED_AT_START, record_shapes)
            result = probe_result(journal, " ".join([script, *args]), returncode)
            read = True
        finally:
            if json_path is None or not read:
                journal.unlink(missing_ok=True)
    file = probe_file(result)
    console = _console(stderr=True)
    if json_path is not None:  # the records first: a rendering fault never loses them
        _write_text(json_path, json_render.render_probe(result, file.report))
        if journal is not None:
            journal.unlink(missing_ok=True)
    if stream_out is not None:
        _write_text(stream_out, "".join(json.dumps(row) + "\n" for row in probe_stream(result)))
    _show(file, console, outputs)
    if json_path is not None:
        _say(console, f"probe JSON: {_shown(json_path)}")
    if stream_out is not None:
        _say(console, f"shape stream: {_shown(stream_out)}")
    if record_shapes is not None:
        _say(console, f"recorded shapes: {_shown(record_shapes)} (per function, {record_shapes.stem}.<function>"
                      f"{record_shapes.suffix} when several)")
    if trace_dir is not None:
        return result.exit_code
    from .probe.launch import end_as

    return end_as(returncode)


def _probe_journal(json_path: Path | None) -> Path:
    """Where the probed program streams its records: beside the probe JSON (as ``run``'s
    journal), else a temporary file."""
    import os
    import tempfile

    try:
        if json_path is None:
            fd, name = tempfile.mkstemp(prefix="compilescope-probe-", suffix=".journal")
            os.close(fd)
            return Path(name)
        from .execute.journal import journal_path

        journal = journal_path(json_path)
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.write_bytes(b"")
        return journal
    except OSError as exc:
        raise OptionError(f"cannot write the probe journal: {exc.strerror}") from None


_IGNORED_AT_START: set[int] = set()  # ignored when compilescope started (nohup, `&`): kept so for a probed program


class _ForecastProgress:
    """A dry run's progress while it runs: a live line on a terminal; off one, a plain line on
    stderr every :attr:`EVERY_S` seconds (a log shows the run is alive and where it is)."""

    EVERY_S = 5.0

    def __init__(self, console: Console) -> None:
        self.console, self.live = console, console.is_terminal
        self.last = 0.0

    def __enter__(self) -> _ForecastProgress:
        if self.live:
            self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                TextColumn("{task.completed}/{task.total} requests"), TimeElapsedColumn(),
                                console=self.console, transient=True)
            self.bar.__enter__()
            self.task = self.bar.add_task("forecast", total=None)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live:
            self.bar.__exit__(*exc)

    def __call__(self, p: Any) -> None:
        what = (f"{p.strategy}: {p.shapes}/{p.distinct} distinct shapes run, {p.traced} traced"
                + (", computing for real" if p.computed else ""))
        if self.live:
            self.bar.update(self.task, description=escape(what), completed=p.requests, total=p.stream_length)
        elif p.elapsed_s - self.last >= self.EVERY_S:
            self.last = p.elapsed_s
            print(f"forecast: {what}; {p.requests}/{p.stream_length} requests, {p.elapsed_s:.0f} s", file=sys.stderr,
                  flush=True)


@cli.command("forecast")
@click.argument("workload")
@click.option("--stream", help="shapes, as for run (a recorded `@shapes.jsonl` too); default: the workload's.")
@click.option("--strategies", default="default,static,dynamic", show_default=True,
              help="comma-separated compiling strategies to forecast.")
@click.option("--backend", default="inductor", show_default=True,
              help="the backend the forecast is for: eager, aot_eager or inductor.")
@click.option("--dry-backend", default=None, metavar="NAME",
              help="for --backend inductor: aot_eager traces faster, blind to the guards inductor adds while "
                   "it lowers (default: inductor-lowering, inductor's own lowering with no kernel built); for "
                   "--backend aot_eager: eager (Dynamo alone), blind to those AOT autograd adds.")
@click.option("--mark", "marks", multiple=True, metavar="INPUT:DIM[:MIN:MAX]",
              help="for mark-dynamic / shapes-spec (repeatable), as for run.")
@click.option("--recompile-limit", type=click.IntRange(min=1), default=None,
              help="the recompile limit to forecast under (default: PyTorch's).")
@click.option("--results", "results_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="a run's results JSON whose measured compile times predict the compile seconds.")
@click.option("--from-results", "recorded_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="a run's (or probe's) results JSON: forecast from the guards its cache entries recorded.")
@click.option("--method", type=click.Choice(["dry-run", "recorded", "both"]), default=None,
              help="dry-run (default), recorded (the default with --from-results), or both side by side.")
@click.option("--function", "function", default=None, metavar="NAME",
              help="with a probe's --from-results that compiled several functions: the one to forecast.")
@click.option("--no-compute", is_flag=True,
              help="never compute for real: a request that needs tensor values is unknown, and so is each "
                   "request after it in its strategy.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="write the forecast as JSON (`-`: stdout).")
@click.option("--python", "python", default=None, metavar="PATH",
              help="forecast for the torch of this Python interpreter: the command runs there (it must import "
                   "this compilescope).")
@outputs_option("json", "text", aliases="--json")
def forecast_command(workload: str, stream: str | None, strategies: str, backend: str, dry_backend: str | None,
                     marks: tuple[str, ...], recompile_limit: int | None, results_path: Path | None, recorded_path: Path | None,
                     method: str | None, function: str | None, no_compute: bool, json_path: Path | None,
                     outs: tuple[Path, ...], python: str | None) -> int:
    """Predict, per request of a stream, what torch.compile will do under each strategy — hit a
    compiled graph, compile (with the guards that fail), run eagerly at the recompile limit, or
    unknown (with why) — by running Dynamo on the real code with the real parameters and inputs,
    each call on fake tensors of the real device, and a backend that builds nothing (for
    inductor: its lowering and kernel source, no kernel built). No kernel runs, unless a request
    needs tensor values (a nonzero, an .item()): that strategy's dry run then computes for real,
    and says so. A forecast costs the stream's distinct shapes' tracing, not its requests.

    With --from-results RUN.json, the forecast evaluates the guards each cache entry of that
    run recorded (no model, no Dynamo); --method both runs the dry run too and compares them."""
    if python is not None:
        return _in_interpreter(python)
    from .forecast import compare_forecasts, forecast, forecast_recorded
    from .options import scratch_inductor_cache
    from .report import ForecastReport

    click.get_current_context().with_resource(scratch_inductor_cache())  # Dynamo runs here: no torchinductor_* left

    method = method or ("recorded" if recorded_path is not None else "dry-run")
    if method != "dry-run" and recorded_path is None:
        raise OptionError(f"--method {method} needs --from-results RUN.json (a run that recorded its guards)")
    if recorded_path is not None and method == "dry-run":
        raise OptionError("--from-results is read by --method recorded or both, not dry-run")
    if function is not None and recorded_path is None:
        raise OptionError("--function picks a compiled function of a probe's --from-results file")
    if dry_backend is not None and method == "recorded":
        raise OptionError("--dry-backend is for the dry run; --method recorded runs none")
    if no_compute and method == "recorded":
        raise OptionError("--no-compute is for the dry run; --method recorded runs none")
    console = _console(stderr=_stdout_output(json=json_path))
    outputs = _outputs(outs, json=json_path)
    _check_kinds(outputs, ForecastReport, "a forecast")
    inputs = [(p, flag) for p, flag in ((results_path, "--results"), (recorded_path, "--from-results")) if p is not None]
    _check_outputs(outputs, inputs=[*inputs, *_stream_inputs((stream, "--stream"))])
    recorded = dry = None
    if method != "dry-run":
        recorded = forecast_recorded(workload, stream, recorded_path, strategies, times=results_path,
                                     recompile_limit=recompile_limit, function=function)
    if method != "recorded":
        with _ForecastProgress(console) as progress:
            dry = forecast(workload, stream, strategies, backend=backend, recompile_limit=recompile_limit,
                           marks=tuple(parse_mark(m) for m in marks), results=results_path, dry_backend=dry_backend,
                           progress=progress, compute=not no_compute)
    report = compare_forecasts(dry, recorded) if dry is not None and recorded is not None else (dry or recorded)
    _show(report, console, outputs)
    return 0


@cli.command("warmup")
@click.argument("workload")
@click.option("--stream", required=True, help="the recorded stream to plan for (`@shapes.jsonl`, or shapes as for run).")
@click.option("--strategies", default="default,static,dynamic", show_default=True,
              help="comma-separated compiling strategies to plan.")
@click.option("--backend", default="inductor", show_default=True, help="eager, aot_eager or inductor.")
@click.option("--mark", "marks", multiple=True, metavar="INPUT:DIM[:MIN:MAX]",
              help="for mark-dynamic / shapes-spec (repeatable), as for run.")
@click.option("--recompile-limit", type=click.IntRange(min=1), default=None,
              help="plan under this recompile limit (default: find the one each plan needs, and say it).")
@lifetime_options
@click.option("--cache", "cache", default="cold,warm,mega", show_default=True,
              help="start modes to measure each plan in: cold, warm, mega (comma list).")
@click.option("--samples", type=click.IntRange(min=1), default=10, show_default=True,
              help="steady-state samples per shape (at most).")
@click.option("--threads", type=click.IntRange(min=0), default=1, show_default=True,
              help="torch threads in each trial (0 = torch's default).")
@click.option("--timeout", type=click.FloatRange(min=1), default=900.0, show_default=True,
              help="seconds before a trial process is killed and recorded as timed out.")
@click.option("--plan-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="write the plan file (versioned JSON) here.")
@click.option("--artifacts", "artifacts_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="save each strategy's mega-cache artifacts (its cold trial's) in this folder, inside the plan "
                   "file's folder (warm_up loads a plan's artifacts from nowhere else); needs --plan-out.")
@click.option("--no-measure", is_flag=True, help="print the dry-run plan only (a forecast; no trial runs).")
@click.option("--verify", "heldout", default=None, metavar="HELDOUT",
              help="then replay a held-out stream after the recommended plan's start-up, and report it; "
                   "exit 1 when a request raised, or compiled or ran eagerly after start-up unlisted by the plan.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="write the warm-up report as JSON (`-`: stdout).")
@outputs_option("json", "html", "text", aliases="--json")
@executor_options
def warmup_command(workload: str, stream: str, strategies: str, backend: str, marks: tuple[str, ...],
                   recompile_limit: int | None, lifetime: str | None, qps: float | None, cache: str, samples: int,
                   threads: int, timeout: float, plan_out: Path | None, artifacts_dir: Path | None, no_measure: bool,
                   heldout: str | None, json_path: Path | None, outs: tuple[Path, ...], executor: str,
                   ray_address: str | None, cpus_per_trial: float, ray_timeout: float) -> int:
    """Plan the warm-up: for each strategy, the smallest ordered list of shapes to call at
    start-up so that replaying the recorded stream compiles nothing after start-up (found by dry
    run, in seconds), the recompile limit it needs, then — measured by trials — its start-up cost
    cold, warm and from mega-cache artifacts, its steady state, and which strategy pays over
    --lifetime."""
    from .options import parse_cache_modes, scratch_inductor_cache
    from .report.warmup import WarmupReport

    click.get_current_context().with_resource(scratch_inductor_cache())  # Dynamo runs here: no torchinductor_* left

    chosen = ExecutorChoice(executor, ray_address, cpus_per_trial, ray_timeout)
    from .warmup.verify import verify_plan
    console = _console(stderr=_stdout_output(json=json_path))
    outputs = _outputs(outs, json=json_path)
    _check_kinds(outputs, WarmupReport, "a warm-up report")
    requests = parse_lifetime(lifetime, qps)
    caches = parse_cache_modes(cache)
    _check_warmup_paths(plan_out, artifacts_dir, no_measure, caches, backend)
    _check_outputs(outputs, others=[(plan_out, "--plan-out")],
                   inputs=_stream_inputs((stream, "--stream"), (heldout, "--verify")))
    if heldout is not None:  # a bad held-out stream is an error before any planning
        from .stream import parse_stream
        from .workload import load_workload

        from .errors import StreamError

        try:
            loaded = load_workload(workload)
            parse_stream(heldout, loaded.dims, loaded.recorded_dims)
        except StreamError as exc:
            raise StreamError(f"--verify: {exc}") from None
    from .warmup.plan import plan_warmup

    import time

    started = time.perf_counter()
    plan = plan_warmup(workload, stream, strategies, backend=backend, recompile_limit=recompile_limit,
                       marks=tuple(parse_mark(m) for m in marks))
    report = _measure_warmup(plan, stream, console, no_measure, requests, caches, samples, threads, timeout,
                             chosen, artifacts_dir, plan_out, time.perf_counter() - started)
    if plan_out is not None:
        from .warmup.planfile import save_plan

        save_plan(report.plan, plan_out)
    # written before the verification starts, so a failing replay loses nothing (stdout once, at the end)
    _show(report, console, [o for o in outputs if o.path != STDOUT] if heldout is not None else outputs)
    if plan_out is not None:
        _say(console, f"plan: {plan_out}")
    if heldout is not None:  # the recommended plan; unmeasured, the first strategy's
        import dataclasses

        which = report.plan.recommended or report.plan.plans[0].strategy
        if report.plan.recommended is None:
            _say(console, f"--verify: nothing was measured to recommend a strategy, so the first one's plan is "
                          f"verified: {which}")
        verified = verify_plan(report.plan, heldout, strategy=which, executor=chosen.start())
        _show(verified, console, [])
        for what, path in _write_outputs(dataclasses.replace(report, verified=verified), outputs):
            _say(console, f"{what} (with the verification): {_shown(path)}")
        return 0 if verified.passed else 1  # a replay the plan did not keep off the request path is a failure
    return 0


def _check_warmup_paths(plan_out: Path | None, artifacts_dir: Path | None, no_measure: bool,
                        caches: tuple[str, ...], backend: str) -> None:
    from .options import check_writable

    if plan_out == STDOUT:
        raise OptionError("--plan-out cannot be `-`: the plan is a file a service reads; give a path")
    if plan_out is not None:
        check_writable(plan_out, "--plan-out")
    if artifacts_dir is None:
        return
    if plan_out is None:
        raise OptionError("--artifacts needs --plan-out: the plan file names the artifacts relative to its folder")
    if backend != "inductor":
        raise OptionError(f"--artifacts needs --backend inductor: backend {backend} saves no cache artifacts")
    if no_measure or "mega" not in caches:
        raise OptionError("--artifacts needs the mega start measured (the cold trial saves the artifacts): "
                          "drop --no-measure and keep mega in --cache")
    if artifacts_dir.exists() and not artifacts_dir.is_dir():
        raise OptionError(f"--artifacts {str(artifacts_dir)!r} is not a folder")
    import os

    try:
        Path(os.path.realpath(artifacts_dir)).relative_to(os.path.realpath(plan_out.absolute().parent))
    except ValueError:
        raise OptionError(f"--artifacts {str(artifacts_dir)!r} is outside the plan file's folder: warm_up loads a "
                          "plan's artifacts only from inside its own folder (give e.g. --artifacts "
                          f"{str(plan_out.parent / 'artifacts')!r})") from None


def _measure_warmup(plan: Any, stream: str, console: Console, no_measure: bool, requests: int | None,
                    caches: tuple[str, ...], samples: int, threads: int, timeout: float, chosen: ExecutorChoice,
                    artifacts_dir: Path | None, plan_out: Path | None, plan_s: float = 0.0) -> Any:
    import dataclasses

    from .warmup.measure import (
        MEASURE, KeepArtifacts, dry_report, measure_plan, save_artifacts, start_modes, trial_plan,
    )

    if no_measure:
        return dry_report(plan, plan_s)
    measure = dataclasses.replace(MEASURE, samples=samples, min_samples=min(MEASURE.min_samples, samples),
                                  threads=threads or None)
    keep = KeepArtifacts(chosen.start())
    total = len(trial_plan(plan, (), start_modes(plan, caches)[0], measure))
    report = _with_progress(console, total, lambda cb: measure_plan(
        plan, stream, lifetime=requests, caches=caches, measure=measure, timeout_s=timeout, on_progress=cb, keep=keep))
    if artifacts_dir is not None and plan_out is not None:
        saved, written = save_artifacts(report.plan, keep.artifacts, artifacts_dir, plan_out.parent)
        _say(console, f"artifacts: {artifacts_dir} ({', '.join(written) or 'none: no cold trial returned any'})")
        report = dataclasses.replace(report, plan=saved)
    return report


def _install_signal_handlers() -> None:
    """SIGINT, SIGTERM and SIGHUP end a run the same way: the running trial is killed,
    finished trials are saved, and the way to resume is printed. SIGINT is installed
    explicitly too: a process started in the background by a shell inherits it ignored."""
    import signal

    from .execute.local import Interrupted

    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) == signal.SIG_IGN:
                _IGNORED_AT_START.add(sig)
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread, or not supported
            pass


class _NeverRaised(Exception):
    pass


def _loaded(module: str, name: str) -> type[BaseException]:
    """The exception class ``name`` of ``compilescope.<module>`` when that module was imported,
    else a class nothing raises: an exception of a module never imported was never raised, and
    main() imports nothing heavy to catch it."""
    found = sys.modules.get(f"{__package__}.{module}")
    return getattr(found, name) if found is not None else _NeverRaised


_INVOKED: list[str] = []  # this command's arguments, for one to run again in another interpreter


def _in_interpreter(python: str) -> int:
    """This very command, less its ``--python PATH``, run by that interpreter (after it was
    checked to import torch and this compilescope); its exit status."""
    import subprocess

    from .prepare import check_trial_interpreter

    check_trial_interpreter(python)
    args, skip = [], False
    for arg in _INVOKED:
        if skip:
            skip = False
        elif arg == "--python":
            skip = True
        elif not arg.startswith("--python="):
            args.append(arg)
    return subprocess.run([python, "-m", "compilescope.cli", *args]).returncode


def main(argv: list[str] | None = None) -> int:
    from .execute.local import Interrupted

    _INVOKED[:] = list(sys.argv[1:] if argv is None else argv)
    _install_signal_handlers()
    try:
        rv = cli.main(args=argv, prog_name="compilescope", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0
    except click.ClickException as exc:
        click.echo(f"compilescope: error: {exc.format_message()}", err=True)
        return EXIT_USAGE
    except CompilescopeError as exc:
        click.echo(f"compilescope: error: {exc}", err=True)
        return EXIT_USAGE
    except _loaded("api", "RunInterrupted") as caught:  # evaluated only when an exception gets here
        run: Any = caught
        done = sum(1 for t in run.result.trials if t.status != "interrupted")
        total = done + len(run.result.missing)
        where = f"; saved in {run.path}" if run.path else ""
        click.echo(f"compilescope: interrupted: {done} of {total} trial(s) finished{where}", err=True)
        if run.path:
            click.echo(f"compilescope: resume with: compilescope run --resume {shlex.quote(str(run.path))}", err=True)
        return 128 + run.signum
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("compilescope: interrupted", err=True)
        return 130
    except Interrupted as exc:
        click.echo("compilescope: interrupted", err=True)
        return 128 + exc.signum
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    sys.exit(main())
