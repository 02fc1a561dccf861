"""``compilescope warmup``: parse the options, call :func:`compilescope.app.warmup.warmup`,
render the plan and what measured it (written before a ``--verify`` replay starts), then the
verification; exit 1 when the replay did not hold, or every strategy's dry run failed."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ..errors import OptionError
from ..options import parse_lifetime, parse_mark
from ..report import VerifyReport
from ..report.warmup import WarmupReport
from .common import STDOUT, FiniteRange, check_kinds, check_outputs, console, outputs, say, show, shown, stdout_output, \
    stream_inputs, user_prints_to_stderr, write_outputs
from .options import ExecutorChoice, complete_workload, options, outputs_option
from .progress import ConsoleProgress
from .root import cli


@cli.command("warmup")
@click.argument("workload", shell_complete=complete_workload)
@click.option("--stream", required=True, help="the recorded stream to plan for (`@shapes.jsonl`, or shapes as for run).")
@click.option("--strategies", default="default,static,dynamic", show_default=True,
              help="comma-separated compiling strategies to plan.")
@click.option("--backend", default="inductor", show_default=True, help="eager, aot_eager or inductor.")
@click.option("--mark", "marks", multiple=True, metavar="INPUT:DIM[:MIN:MAX]",
              help="for mark-dynamic / shapes-spec (repeatable), as for run.")
@click.option("--recompile-limit", type=click.IntRange(min=1), default=None,
              help="plan under this recompile limit (default: find the one each plan needs, and say it).")
@options("lifetime")
@click.option("--cache", "cache", default="cold,warm,mega", show_default=True,
              help="start modes to measure each plan in: cold, warm, mega (comma list).")
@click.option("--samples", type=click.IntRange(min=1), default=10, show_default=True,
              help="steady-state samples per shape (at most).")
@click.option("--threads", type=click.IntRange(min=0, max=4096), default=1, show_default=True,
              help="torch threads in each trial (0 = torch's default).")
@click.option("--timeout", type=FiniteRange(min=1), default=900.0, show_default=True,
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
@outputs_option(WarmupReport, VerifyReport, aliases="--json")
@options("executor")
def warmup_command(workload: str, stream: str, strategies: str, backend: str, marks: tuple[str, ...],
                   recompile_limit: int | None, lifetime: str | None, qps: float | None, cache: str, samples: int,
                   threads: int, timeout: float, plan_out: Path | None, artifacts_dir: Path | None, no_measure: bool,
                   heldout: str | None, json_path: Path | None, outs: tuple[Path, ...],
                   executor: ExecutorChoice) -> int:
    """Plan the warm-up: for each strategy, the smallest ordered list of shapes to call at
    start-up so that replaying the recorded stream compiles nothing after start-up (found by dry
    run, in seconds), the recompile limit it needs, then — measured by trials — its start-up cost
    cold, warm and from mega-cache artifacts, its steady state, and which strategy pays over
    --lifetime. Exit 1 when every strategy's dry run failed on every recorded shape."""
    streams = stream_inputs((stream, "--stream"), (heldout, "--verify"))  # refused at once, before torch loads
    from ..app.warmup import exit_status, warmup
    from ..options import parse_cache_modes
    from ..report.warmup import WarmupReport

    to_stdout = stdout_output(json=json_path)
    out = console(stderr=to_stdout)
    chosen = outputs(outs, json=json_path)
    check_kinds(chosen, WarmupReport, "a warm-up report")
    requests = parse_lifetime(lifetime, qps)
    caches = parse_cache_modes(cache)
    _check_warmup_paths(plan_out, artifacts_dir, no_measure, caches, backend)
    check_outputs(chosen, others=[(plan_out, "--plan-out")],
                  inputs=streams)

    def planned(report: WarmupReport) -> None:
        # written before the verification starts, so a failing replay loses nothing (stdout once, at the end)
        show(report, out, [o for o in chosen if o.path != STDOUT] if heldout is not None else chosen)
        if plan_out is not None:
            say(out, f"plan: {plan_out}")

    with user_prints_to_stderr(to_stdout):  # the dry runs run the workload's code here
        report = warmup(
            workload, stream, strategies, backend=backend, marks=tuple(parse_mark(m) for m in marks),
            recompile_limit=recompile_limit, lifetime=requests, caches=caches, samples=samples, threads=threads,
            timeout_s=timeout, measure=not no_measure, plan_out=plan_out, artifacts=artifacts_dir, heldout=heldout,
            executor=executor.start, on_report=planned, progress=ConsoleProgress(out),
        )
    if report.verified is not None:
        show(report.verified, out, [])
        for what, path in write_outputs(report, chosen):
            say(out, f"{what} (with the verification): {shown(path)}")
    return exit_status(report)  # a replay the plan did not keep off the request path, or no plan at all: 1


def _check_warmup_paths(plan_out: Path | None, artifacts_dir: Path | None, no_measure: bool,
                        caches: tuple[str, ...], backend: str) -> None:
    from ..options import check_writable

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
    try:
        Path(os.path.realpath(artifacts_dir)).relative_to(os.path.realpath(plan_out.absolute().parent))
    except ValueError:
        raise OptionError(f"--artifacts {str(artifacts_dir)!r} is outside the plan file's folder: warm_up loads a "
                          "plan's artifacts only from inside its own folder (give e.g. --artifacts "
                          f"{str(plan_out.parent / 'artifacts')!r})") from None
