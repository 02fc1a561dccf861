"""``compilescope compare``: parse the options, call :func:`compilescope.app.compare.compare`,
render the comparison; exit 1 on a regression beyond ``--fail-on-regression``."""

from __future__ import annotations

from pathlib import Path

import click

from .common import EXIT_FAILED, check_kinds, check_outputs, console, outputs, show, stdout_output
from ..report import CompareReport
from .options import outputs_option
from .root import cli


@cli.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--store", "store_path", type=click.Path(dir_okay=False, path_type=Path),
              help="A and B are --where filters (COLUMN=VALUE,…) selecting one run each from this results store.")
@click.option("--pair-by", type=click.Choice(["label", "strategy"]), default="label", show_default=True,
              help="pair trials by label (strategy and start mode), or by strategy alone: default (cold) with "
                   "default (warm).")
@click.option("--pair", "pairs", multiple=True, metavar="A_NAME=B_NAME",
              help="compare this trial of A with this one of B, each a strategy or a label (repeatable): "
                   "default=guard-filter[inbuilt-nn]. Without it, when each run has one compiled strategy, "
                   "those pair.")
@click.option("--fail-on-regression", default=None, metavar="PCT",
              help="exit 1 when a flagged regression is beyond PCT (e.g. 5%); a trial B failed (whether A did "
                   "or not) or new request errors always are.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="also write a side-by-side HTML page (needs compilescope[html]).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="write the comparison as JSON (`-`: stdout).")
@outputs_option(CompareReport, aliases="--json/--html")
def compare_command(a: str, b: str, store_path: Path | None, pair_by: str, pairs: tuple[str, ...],
                    fail_on_regression: str | None,
                    html_path: Path | None, json_path: Path | None, outs: tuple[Path, ...]) -> int:
    """Compare two run results of one workload and stream (A the baseline): status, request
    errors, eager fallbacks, compiles, compile time, first call, speedup and what the guards
    cost per trial and shape, flagged only beyond the noise."""
    from ..app.compare import compare
    from ..options import parse_threshold
    from ..report import CompareReport

    threshold = parse_threshold(fail_on_regression) if fail_on_regression is not None else None
    chosen = outputs(outs, json=json_path, html=html_path)
    check_kinds(chosen, CompareReport, "a comparison")
    check_outputs(chosen, inputs=[(store_path, "--store")] if store_path is not None else
                  [(Path(a), "A"), (Path(b), "B")])
    report = compare(a, b, store=store_path, pair_by=pair_by, pairs=pairs)
    show(report, console(stderr=stdout_output(json=json_path, html=html_path)), chosen)
    if threshold is not None and report.regressions_beyond(threshold):
        return EXIT_FAILED
    return 0
