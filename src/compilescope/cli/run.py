"""``compilescope run``: parse the options, call :func:`compilescope.app.run.run_workload` (or
``resume``, or advise for ``--advise``), render the run."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import OptionError
from ..model import DEFAULT_STRATEGIES, StrategyOptions
from ..options import parse_buckets, parse_fail_on, parse_lifetime, parse_mark
from ..strategies import strategy_names  # the registry imports no torch
from .common import (
    STDOUT,
    check_kinds,
    check_outputs,
    command_line,
    console,
    ended,
    lock_results,
    refuse_unfinished,
    outputs,
    refuse_given,
    results_out,
    results_outputs,
    results_to_stdout,
    show,
    stdout_output,
    user_prints_to_stderr,
    stream_inputs,
)
from .options import EXECUTOR_OPTIONS, ExecutorChoice, complete_strategies, complete_workload, measure, options
from .progress import ConsoleProgress
from .root import cli

# what --resume still takes: the journal holds the run (workload, stream, strategies, options)
RESUME_OPTIONS = {"resume_path", "csv_path", "html_path", "perfetto_path", "outs", "fail_on", *EXECUTOR_OPTIONS}
# what run --advise uses (it runs the default and its own proposals, not a strategy matrix)
ADVISE_OPTIONS = {"advise_flag", "stream", "backend", "mode", "lifetime", "qps", "threads", "warmup", "samples",
                  "budget", "device", "python", "timeout", "json_path", "csv_path", "html_path", "perfetto_path",
                  "outs", *EXECUTOR_OPTIONS}


@cli.command("run")
@click.argument("workload", required=False, shell_complete=complete_workload)
@click.option("--stream", help="shapes: 16,32,64 | batch=4,seq=32;… | product:… | random:… | @file.jsonl")
@click.option("--strategies", default=",".join(DEFAULT_STRATEGIES), show_default=True,
              shell_complete=complete_strategies, help=f"comma list of: {', '.join(strategy_names())}.")
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
                   "Exit 1 always when every compiled trial failed, or ran no request compiled (with no "
                   "compiled trial: when every trial failed).")
@options("executor", "lifetime", "html", "measure")
def run_command(workload: str | None, stream: str | None, strategies: str, cache: str, backend: str,
                mode: str | None, marks: tuple[str, ...], dynamic_sources: str | None, block: str | None,
                buckets: str, recompile_limit: int | None, resume_path: Path | None, advise_flag: bool,
                fail_on: str | None, executor: ExecutorChoice,
                lifetime: str | None, qps: float | None, html_path: Path | None, perfetto_path: Path | None,
                outs: tuple[Path, ...], threads: int, warmup: int, samples: int, budget: float,
                device: str, python: str | None, timeout: float, json_path: Path | None, csv_path: Path | None) -> int:
    """Run WORKLOAD (file.py:name, package.module:name or a built-in) over a shape stream."""
    streams = stream_inputs((stream, "--stream"))  # its syntax refused at once, before torch is imported
    from ..app.run import default_results_path, resume, run_workload
    from ..options import check_writable
    from ..report import RunFile

    to_stdout = stdout_output(json=json_path, csv=csv_path, html=html_path, perfetto=perfetto_path)
    out = console(stderr=to_stdout)
    chosen, json_path = results_out(outputs(outs, csv=csv_path, html=html_path, perfetto=perfetto_path), json_path)
    check_kinds(chosen, RunFile, "a run")
    failing = parse_fail_on(fail_on)
    if resume_path is not None:
        if workload is not None:
            raise click.UsageError("--resume takes the results file; give no WORKLOAD")
        refuse_given("--resume", RESUME_OPTIONS, "the run resumes as its journal describes it (start a new run "
                     "to change it)")
    if advise_flag:
        refuse_given("--advise", ADVISE_OPTIONS, "advise runs the default strategy and its own proposals")
    if qps is not None and lifetime is None:
        raise OptionError("--qps turns a --lifetime duration into requests: give --lifetime (e.g. 8h) too")
    check_outputs(chosen, others=results_outputs(resume_path or (None if json_path == STDOUT else json_path)),
                  inputs=streams)
    if resume_path is not None:
        lock_results(resume_path)
        with user_prints_to_stderr(to_stdout):  # the workload is loaded and checked here
            file = resume(resume_path, executor=executor.start, progress=ConsoleProgress(out))
        results_to_stdout(json_path, resume_path)
        show(file, out, chosen)
        return ended(out, file.report, failing)
    if workload is None:
        raise click.UsageError("give a WORKLOAD (or --resume RESULT.json)")
    if advise_flag:
        from .advise import advise_run

        return advise_run(out, workload, stream, backend, mode, "total", parse_lifetime(lifetime, qps),
                          measure(threads, warmup, samples, budget, device, python), timeout, json_path, chosen,
                          executor=executor, to_stdout=to_stdout)
    strategy_options = StrategyOptions(
        backend=backend, mode=mode, marks=tuple(parse_mark(m) for m in marks), recompile_limit=recompile_limit,
        dynamic_sources=dynamic_sources, block=block, buckets=parse_buckets(buckets),
    )
    results = json_path if json_path not in (None, STDOUT) else default_results_path(workload)
    check_writable(results, "results")
    lock_results(results)
    refuse_unfinished(results)
    measured = measure(threads, warmup, samples, budget, device, python)
    # importing while the driver loads the workload (not in an interpreter not yet checked)
    executor.start_ahead([measured.threads] * (strategies.count(",") + 2) if measured.python is None else [])
    with user_prints_to_stderr(to_stdout):  # the workload is loaded and checked here
        file = run_workload(
            workload, stream, strategies, results=results, cache=cache, options=strategy_options, measure=measured,
            timeout_s=timeout, lifetime=parse_lifetime(lifetime, qps), command=command_line(),
            executor=executor.start, progress=ConsoleProgress(out),
        )
    results_to_stdout(json_path, results)
    show(file, out, chosen)
    return ended(out, file.report, failing)
