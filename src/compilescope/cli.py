"""Command line: ``compilescope run|demo|report``. Bad input → one line on stderr, exit 2."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .errors import CompilescopeError, ResultsError
from .analysis.verdict import parse_lifetime
from .model import MeasureOptions, RunResult, StrategyOptions, TrialResult
from .strategies import parse_buckets, parse_mark, strategy_names

EXIT_USAGE = 2
PIPE_WIDTH = 150  # rich falls back to 80 columns off a terminal, too narrow for the tables


def _console(stderr: bool = False) -> Console:
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=PIPE_WIDTH)


def _emit(console: Console, path: Path | None, text: str, what: str) -> None:
    if path is not None:
        _write(path, text)
        console.print(f"{what}: {path}")


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise ResultsError(f"cannot write {path}: {exc.strerror}") from None


def _progress_callback(progress: Progress, task: Any, console: Console) -> Any:
    from .execute.local import PlannedTrial

    def on_progress(trial: PlannedTrial, result: TrialResult | None) -> None:
        if result is None:
            progress.update(task, description=trial.label)
            return
        progress.advance(task)
        mark = "[green]✓[/]" if result.ok else f"[red]✗ {result.status}[/]"
        took = f"{result.process_s:.1f} s" if result.process_s is not None else ""
        console.print(f"  {mark} {trial.label} {took}")

    return on_progress


def _execute(ctx_args: dict[str, Any], console: Console) -> RunResult:
    from .api import execute_run, prepare_run
    from .execute.local import plan_trials

    measure = ctx_args.pop("measure")
    _, base, names = prepare_run(
        ctx_args["workload"], ctx_args["stream"], ctx_args["strategies"], options=ctx_args["options"], measure=measure,
    )
    total = len(plan_trials(base, names, ctx_args["cache"], Path("/nonexistent")))
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(), console=console, transient=True,
    ) as progress:
        task = progress.add_task("starting", total=total)
        return execute_run(
            base, names, ctx_args["cache"], timeout_s=ctx_args["timeout"],
            on_progress=_progress_callback(progress, task, console), command=ctx_args["command"],
            lifetime=ctx_args.get("lifetime"),
        )


def _report(result: RunResult, console: Console, json_path: Path | None, csv_path: Path | None) -> None:
    from .render import console as console_render
    from .render import csv as csv_render
    from .render import json as json_render

    for part in console_render.renderables(result):
        console.print(part)
    _emit(console, json_path, json_render.render(result) if json_path else "", "results")
    _emit(console, csv_path, csv_render.render(result) if csv_path else "", "csv")


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
        click.option("--timeout", type=click.FloatRange(min=1), default=900.0, show_default=True,
                     help="seconds before a trial process is killed and recorded as timed out."),
        click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="write results JSON."),
        click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), help="write results CSV."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def lifetime_options(f: Any) -> Any:
    f = click.option("--qps", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="requests per second, to turn a --lifetime duration into a request count.")(f)
    return click.option("--lifetime", default=None, metavar="N|DURATION",
                        help="process lifetime for the verdict: 10000 requests, or 8h with --qps.")(f)


def _measure(threads: int, warmup: int, samples: int, budget: float, device: str) -> MeasureOptions:
    return MeasureOptions(
        warmup=warmup, samples=samples, min_samples=min(5, samples), budget_s=budget,
        threads=threads or None, device=device,
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Measure what torch.compile costs and gains on your workload across input shapes."""


@cli.command("run")
@click.argument("workload")
@click.option("--stream", help="shapes: 16,32,64 | batch=4,seq=32;… | product:… | random:… | @file.jsonl")
@click.option("--strategies", default="eager,default,static,dynamic", show_default=True,
              help=f"comma list of: {', '.join(strategy_names())}.")
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
@lifetime_options
@measure_options
def run_command(workload: str, stream: str | None, strategies: str, cache: str, backend: str, mode: str | None,
                marks: tuple[str, ...], dynamic_sources: str | None, block: str | None, buckets: str,
                recompile_limit: int | None, lifetime: str | None, qps: float | None, threads: int, warmup: int,
                samples: int, budget: float, device: str, timeout: float, json_path: Path | None,
                csv_path: Path | None) -> None:
    """Run WORKLOAD (file.py:name, package.module:name or a built-in) over a shape stream."""
    console = _console()
    options = StrategyOptions(
        backend=backend, mode=mode, marks=tuple(parse_mark(m) for m in marks), recompile_limit=recompile_limit,
        dynamic_sources=dynamic_sources, block=block, buckets=parse_buckets(buckets),
    )
    args = dict(
        workload=workload, stream=stream, strategies=strategies, cache=cache, options=options,
        measure=_measure(threads, warmup, samples, budget, device), timeout=timeout,
        command=shlex.join(["compilescope", *sys.argv[1:]]), lifetime=parse_lifetime(lifetime, qps),
    )
    _report(_execute(args, console), console, json_path, csv_path)


@cli.command("demo")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("compilescope-results"),
              show_default=True, help="directory for demo.json and demo.csv.")
@click.option("--workload", default="transformer", show_default=True, help="built-in workload to run.")
@click.option("--lifetime", default="100000", show_default=True, metavar="N|DURATION",
              help="process lifetime for the verdict (requests, or a duration with --qps).")
@click.option("--qps", type=click.FloatRange(min=0, min_open=True), default=None)
def demo_command(out: Path, workload: str, lifetime: str, qps: float | None) -> None:
    """The main job on a built-in workload: eager vs default/static/dynamic with inductor."""
    console = _console()
    requests = parse_lifetime(lifetime, qps)
    console.print(f"[bold]compilescope demo[/]: built-in workload {workload!r}, inductor, cold cache, one fresh "
                  f"process per trial, verdict over {requests:,} requests")
    args = dict(
        workload=workload, stream=None, strategies="eager,default,static,dynamic", cache="cold",
        options=StrategyOptions(backend="inductor"), measure=_measure(1, 3, 100, 1.0, "cpu"), timeout=900.0,
        command="compilescope demo", lifetime=requests,
    )
    _report(_execute(args, console), console, out / "demo.json", out / "demo.csv")


@cli.command("report")
@click.argument("result", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), help="also write CSV.")
@lifetime_options
def report_command(result: Path, csv_path: Path | None, lifetime: str | None, qps: float | None) -> None:
    """Print the tables for a results JSON written by run or demo."""
    import dataclasses

    from .schema import load

    loaded = load(result)
    if lifetime is not None:
        loaded = dataclasses.replace(loaded, lifetime=parse_lifetime(lifetime, qps))
    _report(loaded, _console(), None, csv_path)


@cli.command("probe", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="write the probe JSON.")
@click.option("--stream-out", type=click.Path(dir_okay=False, path_type=Path),
              help="write the input shapes seen as a stream for `run --stream @FILE`.")
@click.option("--trace", "trace_dir", type=click.Path(path_type=Path), help="read a TORCH_TRACE directory instead.")
@click.option("--strict", is_flag=True, help="with --trace: fail when any event was unknown or malformed.")
@click.argument("script", required=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def probe_command(json_path: Path | None, stream_out: Path | None, trace_dir: Path | None, strict: bool,
                  script: str | None, args: tuple[str, ...]) -> int:
    """Run SCRIPT ARGS… as `python SCRIPT ARGS…` would and explain every compile, recompile and
    graph break; or read an existing TORCH_TRACE directory with --trace. The report goes to
    stderr; the exit status is the script's."""
    from .probe.capture import probe_script
    from .probe.trace import read_trace
    from .render import probe as probe_render

    rest = list(args)
    # The documented form `probe SCRIPT [args…] [--json OUT] [--stream-out OUT]`: trailing
    # probe options after the script's own arguments are taken as the probe's.
    while len(rest) >= 2 and rest[-2] in ("--json", "--stream-out"):
        value = Path(rest.pop())
        if rest.pop() == "--json":
            json_path = value
        else:
            stream_out = value
    args = tuple(rest)
    if (script is None) == (trace_dir is None):
        raise click.UsageError("give a SCRIPT to run or --trace DIR (one of them)")
    if trace_dir is not None:
        result = read_trace(trace_dir, strict=strict)
    else:
        assert script is not None
        if not Path(script).is_file():
            raise CompilescopeError(f"script {script!r} does not exist")
        result = probe_script(script, list(args))
    console = _console(stderr=True)
    for part in probe_render.renderables(result):
        console.print(part)
    _emit(console, json_path, probe_render.render_json(result) if json_path else "", "probe JSON")
    stream = "".join(json.dumps(row) + "\n" for row in probe_render.stream_lines(result)) if stream_out else ""
    _emit(console, stream_out, stream, "shape stream")
    return result.exit_code


def main(argv: list[str] | None = None) -> int:
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
    except click.exceptions.Abort:
        click.echo("compilescope: interrupted", err=True)
        return 130
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    sys.exit(main())
