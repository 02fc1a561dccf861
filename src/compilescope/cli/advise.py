"""``compilescope advise`` (and ``run --advise``): parse the options, call
:func:`compilescope.app.advise.advise_workload` — or, with ``--script``,
:func:`~compilescope.app.advise.advise_unmodified_script` — and render the advice."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console

from ..errors import OptionError
from ..model import MeasureOptions
from ..options import OBJECTIVES, parse_lifetime
from .common import (
    FiniteRange,
    STDOUT,
    Output,
    check_kinds,
    check_outputs,
    command_line,
    console,
    ended,
    lock_results,
    outputs,
    refuse_given,
    refuse_unfinished,
    results_out,
    results_outputs,
    results_to_stdout,
    say,
    show,
    shown,
    stdout_output,
    user_prints_to_stderr,
    stream_inputs,
    write_text,
)
from .options import ExecutorChoice, complete_workload, measure, options
from .progress import ConsoleProgress
from .root import cli


@cli.command("advise", context_settings={"ignore_unknown_options": True})
@click.argument("workload", required=False, shell_complete=complete_workload)
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option("--script", "script", is_flag=True,
              help="WORKLOAD is a script to run unmodified (its arguments follow it; put them after -- when "
                   "they share a name with an advise option): re-run it under each setting-only fix.")
@click.option("--max-waste", type=FiniteRange(min=0, max=0.9), default=0.125, show_default=True,
              help="buckets from the observed distribution: the most mean padding waste allowed.")
@click.option("--stream", help="shapes, as for run.")
@click.option("--backend", default="inductor", show_default=True)
@click.option("--mode", default=None, help="torch.compile mode (inductor).")
@click.option("--objective", type=click.Choice(OBJECTIVES), default="total", show_default=True,
              help="total: stream wall time plus the rest of --lifetime at the steady mean; p99: the stream's p99 "
                   "latency; steady: the steady mean per request.")
@click.option("--guard-filters/--no-guard-filters", "guard_filters", default=None,
              help="measure PyTorch's guard filters (guard-filter[...]: saving per call, and whether each goes "
                   "stale when what it stops guarding changes) always / never; by default, when the default's "
                   "guard checks are at least 5% of its compiled call.")
@options("executor", "lifetime", "html", "measure")
def advise_command(workload: str | None, script_args: tuple[str, ...], script: bool, max_waste: float,
                   stream: str | None, backend: str, mode: str | None, objective: str, guard_filters: bool | None,
                   executor: ExecutorChoice,
                   lifetime: str | None, qps: float | None, html_path: Path | None, perfetto_path: Path | None,
                   outs: tuple[Path, ...], threads: int, warmup: int, samples: int, budget: float, device: str,
                   python: str | None, timeout: float, json_path: Path | None, csv_path: Path | None) -> int:
    """Run the default strategy, propose the narrowest fix for each recompile cause, measure every
    proposal in the same run, and recommend only what measured better. With --script, WORKLOAD is
    a script re-run unmodified under each fix a setting can apply."""
    if workload is None:
        raise click.UsageError("give a WORKLOAD, or --script SCRIPT [ARGS…]")
    if script:
        refuse_given("--script", {"script", "timeout", "json_path"},
                     "the script runs unmodified under each setting-only fix (its own options go after --)")
        return _advise_script(workload, list(script_args), timeout, json_path)
    if script_args:
        raise click.UsageError(f"unexpected argument {script_args[0]!r} (arguments follow a script: --script)")
    if qps is not None and lifetime is None:
        raise OptionError("--qps turns a --lifetime duration into requests: give --lifetime (e.g. 8h) too")
    from ..report import RunFile

    to_stdout = stdout_output(json=json_path, csv=csv_path, html=html_path, perfetto=perfetto_path)
    out = console(stderr=to_stdout)
    chosen, json_path = results_out(outputs(outs, csv=csv_path, html=html_path, perfetto=perfetto_path), json_path)
    check_kinds(chosen, RunFile, "an advise run")
    return advise_run(out, workload, stream, backend, mode, objective, parse_lifetime(lifetime, qps),
                      measure(threads, warmup, samples, budget, device, python), timeout, json_path, chosen, max_waste,
                      executor=executor, guard_filters=guard_filters, to_stdout=to_stdout)


def _advise_script(script: str, args: list[str], timeout: float, json_path: Path | None) -> int:
    from ..app.advise import advise_unmodified_script
    from ..app.run import default_results_path
    from ..options import check_writable
    from ..render.json import render_script_advice

    out = console(stderr=json_path == STDOUT)
    results = json_path or default_results_path(f"{Path(script).stem}-advise")
    if results != STDOUT:
        check_writable(results, "results")
        check_outputs([], others=[(results, "results")], inputs=[(script, "the script")])
        lock_results(results)
    advice = advise_unmodified_script(script, args, timeout_s=timeout, progress=ConsoleProgress(out))
    write_text(results, render_script_advice(advice))  # before rendering
    say(out, f"results: {shown(results)}", "dim")
    show(advice, out, [])
    return 0


def advise_run(out: Console, workload: str, stream: str | None, backend: str, mode: str | None, objective: str,
               lifetime: int | None, measured: MeasureOptions, timeout: float, json_path: Path | None,
               chosen: list[Output], max_waste: float = 0.125, *, executor: ExecutorChoice,
               guard_filters: bool | None = None, to_stdout: bool = False) -> int:
    """``advise`` and ``run --advise``: the run saved in its results file, then its report and advice
    (``to_stdout``: an output goes to stdout, where the workload's own prints must not)."""
    streams = stream_inputs((stream, "--stream"))  # its syntax refused at once, before torch is imported
    from ..app.advise import advise_workload
    from ..app.run import default_results_path
    from ..options import check_writable

    results = json_path if json_path not in (None, STDOUT) else default_results_path(workload)
    check_writable(results, "results")
    check_outputs(chosen, others=results_outputs(results), inputs=streams)
    lock_results(results)
    refuse_unfinished(results)
    with user_prints_to_stderr(to_stdout):  # the workload's inputs are made here, to read their sizes
        file = advise_workload(
            workload, stream, results=results, backend=backend, mode=mode, objective=objective, lifetime=lifetime,
            measure=measured, timeout_s=timeout, max_waste=max_waste, command=command_line(), executor=executor.start,
            check_first=not executor.entry.local,  # the workload checked before a cluster is joined
            progress=ConsoleProgress(out), guard_filters=guard_filters,
        )
    results_to_stdout(json_path, results)
    show(file, out, chosen)
    return ended(out, file.report)
