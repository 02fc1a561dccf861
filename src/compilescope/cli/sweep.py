"""``compilescope sweep``: parse the options, open the store, call
:func:`compilescope.app.sweep.sweep`, render each run's summary."""

from __future__ import annotations

from pathlib import Path

import click

from .common import EXIT_FAILED, check_outputs, console, say
from .options import ExecutorChoice, options
from .progress import ConsoleProgress
from .root import cli


@cli.command("sweep")
@click.argument("sweep_file", type=click.Path(dir_okay=False, path_type=Path))
@options("executor")
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="the SQLite results store [default: compilescope-results/sweep-NAME.sqlite].")
def sweep_command(sweep_file: Path, executor: ExecutorChoice, store_path: Path | None) -> int:
    """Run SWEEP_FILE's workloads × strategies × start modes × settings; each finished trial is
    stored at once, and a sweep run again runs only the trials its store lacks."""
    from ..app.sweep import sweep
    from ..execute.local import Interrupted
    from ..options import check_writable, load_sweep
    from ..render.console import summary_table, verdict_group
    from ..store import Store
    from ..sweep import default_store_path

    out = console()
    config = load_sweep(sweep_file)
    store_path = store_path or default_store_path(config.name)
    check_writable(store_path, "results store")
    check_outputs([], others=[(store_path, "--store")], inputs=[(sweep_file, "the sweep file")])
    store = Store(store_path)  # a damaged or locked store is refused before the first trial
    click.get_current_context().call_on_close(store.close)
    store.finished_keys()
    with store:
        try:
            outcome = sweep(config, store, executor=executor.start, executor_name=executor.name,
                            progress=ConsoleProgress(out))
        except (Interrupted, KeyboardInterrupt):
            click.echo(f"compilescope: every finished trial is in {store_path}; run the same command again to run "
                       "only the rest", err=True)
            raise
        for warning in outcome.warnings:
            say(out, f"! {warning}", "yellow")
    for run in outcome.runs:
        say(out, f"{run.workload} (backend {run.backend})", "bold")
        out.print(summary_table(run.report))
        verdicts = verdict_group(run.report)
        if verdicts is not None:
            out.print(verdicts)
    say(out, f"store: {store_path} (compilescope report --store {store_path} --where workload=…)")
    return EXIT_FAILED if outcome.all_failed else 0
