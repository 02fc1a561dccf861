"""``compilescope report``: parse the options, call :mod:`compilescope.app.report`, render
each report."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import OptionError
from ..options import parse_fail_on, parse_lifetime
from .common import check_kinds, check_outputs, console, ended, outputs, say, show, stdout_output
from .options import options
from .root import cli


@cli.command("report")
@click.argument("result", type=click.Path(dir_okay=False, path_type=Path), required=False)
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path),
              help="read the trials from a results store (sweep) instead of a results JSON.")
@click.option("--where", "where", multiple=True, metavar="COLUMN=VALUE",
              help="with --store: only trials matching (workload, strategy, label, cache, backend, status, torch, "
                   "host, device, sweep); repeatable.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="also write CSV (runs; - for stdout, with the report on stderr).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="also write the results JSON again, with its derived summary (- for stdout, with the report on "
                   "stderr).")
@click.option("--fail-on", default=None, metavar="WHAT",
              help="exit 1 when any trial of the results shows: crash, numerics, fallback (comma list), or when "
                   "every compiled trial failed — so a saved result can gate CI as run does.")
@options("html", "lifetime")
def report_command(result: Path | None, store_path: Path | None, where: tuple[str, ...], csv_path: Path | None,
                   json_path: Path | None, fail_on: str | None, html_path: Path | None, perfetto_path: Path | None,
                   outs: tuple[Path, ...], lifetime: str | None, qps: float | None) -> int:
    """Print the report of a results JSON written by run, demo, advise or probe (an advise run's
    advice included), or of the runs in a results store (one report per workload, stream,
    backend and torch version)."""
    from ..app.report import report_file, report_store
    from ..report import ProbeFile, RunFile

    failing = parse_fail_on(fail_on)
    out = console(stderr=stdout_output(csv=csv_path, json=json_path, html=html_path, perfetto=perfetto_path))
    chosen = outputs(outs, csv=csv_path, json=json_path, html=html_path, perfetto=perfetto_path)
    check_outputs(chosen, inputs=[(result, "the results file"), (store_path, "--store")])
    if (result is None) == (store_path is None):
        raise click.UsageError("give a RESULT file or --store PATH (one of them)")
    requests = parse_lifetime(lifetime, qps) if lifetime is not None else None
    statuses = [0]
    if store_path is not None:
        for file in report_store(store_path, where, requests):
            say(out, f"{file.result.workload}: {len(file.result.trials)} trial(s) from {store_path}", "bold")
            show(file, out, chosen)
            statuses.append(ended(out, file.report, failing) if fail_on is not None else 0)
        return max(statuses) if fail_on is not None else 0  # without --fail-on a report is only a report
    assert result is not None
    found = report_file(result, requests)
    if isinstance(found, ProbeFile):
        if csv_path is not None or fail_on is not None:
            raise OptionError("--csv, --lifetime and --fail-on apply to run results, not a probe's")
        check_kinds(chosen, ProbeFile, "a probe")
        show(found, out, chosen)
        return 0
    check_kinds(chosen, RunFile, "a run")
    show(found, out, chosen)  # a run made by advise: its advice again, judged from the records
    return ended(out, found.report, failing) if fail_on is not None else 0
