"""``compilescope forecast``: parse the options, call
:func:`compilescope.app.forecast.forecast_stream`, render the forecast."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import OptionError
from ..options import parse_mark
from ..report import ForecastReport
from .common import (
    check_kinds, check_outputs, console, in_interpreter, outputs, show, stdout_output, stream_inputs,
    user_prints_to_stderr,
)
from .options import complete_workload, outputs_option
from .progress import ConsoleProgress
from .root import cli


@cli.command("forecast")
@click.argument("workload", shell_complete=complete_workload)
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
@click.option("--dynamic-sources", default=None, metavar="SOURCES",
              help="for dynamic-sources: e.g. \"L['x'],L['y']:0\" (exact names or regexes, optional :dim), as for run.")
@click.option("--recompile-limit", type=click.IntRange(min=1), default=None,
              help="the recompile limit to forecast under (default: PyTorch's; with --from-results, the "
                   "recording's).")
@click.option("--results", "results_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="a run's results JSON whose measured compile times predict the compile seconds.")
@click.option("--from-results", "recorded_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="a run's (or probe's) results JSON: forecast from the guards its cache entries recorded.")
@click.option("--method", type=click.Choice(["dry-run", "recorded", "both"]), default=None,
              help="dry-run (default), recorded (the default with --from-results), or both side by side.")
@click.option("--function", "function", default=None, metavar="NAME",
              help="with a probe's --from-results that compiled several functions: the one to forecast.")
@click.option("--no-compute", is_flag=True,
              help="never compute for real: a request that raises on fake tensors (one that needs tensor values, "
                   "or a real error) is unknown, and so is each request after it in its strategy.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="write the forecast as JSON (`-`: stdout).")
@click.option("--python", "python", default=None, metavar="PATH",
              help="forecast for the torch of this Python interpreter: the command runs there (it must import "
                   "this compilescope).")
@outputs_option(ForecastReport, aliases="--json")
def forecast_command(workload: str, stream: str | None, strategies: str, backend: str, dry_backend: str | None,
                     marks: tuple[str, ...], dynamic_sources: str | None, recompile_limit: int | None, results_path: Path | None, recorded_path: Path | None,
                     method: str | None, function: str | None, no_compute: bool, json_path: Path | None,
                     outs: tuple[Path, ...], python: str | None) -> int:
    """Predict, per request of a stream, what torch.compile will do under each strategy — hit a
    compiled graph, compile (with the guards that fail), run eagerly (at the recompile limit, or after a
    failed compile), or unknown (with why) — by running Dynamo on the real code with the real parameters and inputs,
    each call on fake tensors of the real device, and a backend that builds nothing (for
    inductor: its lowering and kernel source, no kernel built). It computes for real instead, and
    says so, where a request needs tensor values (a nonzero, an .item()), where real kernels cost
    less than fake tensors on the stream's first shape, or on a torch without a dry run on fake
    tensors (--no-compute: such requests are unknown). The stream runs in order; a request whose
    shape ran before, with no compile since, repeats that call's outcome without a call (after
    one check call per shape), so a forecast costs the tracing of the entries, not the requests.
    If a call changed what the compiled module holds, the requests not called are unknown.

    With --from-results RUN.json, the forecast evaluates the guards each cache entry of that
    run recorded (no model, no Dynamo); --method both runs the dry run too and compares them.
    Exit 1 when every request of every strategy is forecast to raise."""
    if python is not None:
        return in_interpreter(python)
    from ..app.forecast import exit_status, forecast_stream
    from ..report import ForecastReport

    method = method or ("recorded" if recorded_path is not None else "dry-run")
    if method != "dry-run" and recorded_path is None:
        raise OptionError(f"--method {method} needs --from-results RUN.json (a run that recorded its guards)")
    if recorded_path is not None and method == "dry-run":
        raise OptionError("--from-results is read by --method recorded or both, not dry-run")
    if function is not None and recorded_path is None:
        raise OptionError("--function picks a compiled function of a probe's --from-results file")
    if dry_backend is not None and method == "recorded":
        raise OptionError("--dry-backend is for the dry run; --method recorded runs none")
    backend_given = click.get_current_context().get_parameter_source("backend") not in (
        click.core.ParameterSource.DEFAULT, None)
    if no_compute and method == "recorded":
        raise OptionError("--no-compute is for the dry run; --method recorded runs none")
    to_stdout = stdout_output(json=json_path)
    out = console(stderr=to_stdout)
    chosen = outputs(outs, json=json_path)
    check_kinds(chosen, ForecastReport, "a forecast")
    inputs = [(p, flag) for p, flag in ((results_path, "--results"), (recorded_path, "--from-results")) if p is not None]
    check_outputs(chosen, inputs=[*inputs, *stream_inputs((stream, "--stream"))])
    with user_prints_to_stderr(to_stdout):  # the dry run runs the workload's code here
        report = forecast_stream(
            workload, stream, strategies, method=method, backend=backend, dry_backend=dry_backend,
            marks=tuple(parse_mark(m) for m in marks) if method != "recorded" else (),
            dynamic_sources=dynamic_sources if method != "recorded" else None, recompile_limit=recompile_limit,
            results=results_path,
            recorded=recorded_path, function=function, compute=not no_compute, progress=ConsoleProgress(out),
            recorded_backend=backend if backend_given and method == "recorded" else None,
        )
    show(report, out, chosen)
    return exit_status(report)
