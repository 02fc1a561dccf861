"""``compilescope demo``: the main job on a built-in workload (:func:`compilescope.app.demo.demo`),
its results, CSV and HTML report written in one folder."""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from ..errors import OptionError
from ..options import parse_lifetime
from .common import FiniteRange, Output, console, ended, lock_results, show
from .progress import ConsoleProgress
from .root import cli


@cli.command("demo")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("compilescope-results"),
              show_default=True, help="directory for demo.json, demo.csv and demo.html (here --out is a directory, "
                                      "not an output file as for the other commands).")
@click.option("--workload", default="transformer", show_default=True, help="built-in workload to run.")
@click.option("--lifetime", default="100000", show_default=True, metavar="N|DURATION",
              help="process lifetime for the verdict (requests, or a duration with --qps).")
@click.option("--qps", type=FiniteRange(min=0, min_open=True), default=None)
def demo_command(out: Path, workload: str, lifetime: str, qps: float | None) -> int:
    """The main job on a built-in workload: eager vs default/static/dynamic with inductor."""
    from ..app.demo import demo
    from ..options import check_writable

    shown_on = console()
    requests = parse_lifetime(lifetime, qps)
    check_writable(out / "demo.json", "results")
    check_writable(out / "demo.csv", "csv")
    html_path: Path | None = out / "demo.html"
    try:
        from ..render.html import require_plotly

        require_plotly()
    except OptionError:
        html_path = None  # plotly absent: the demo still runs, without the HTML report
    if html_path is not None:
        check_writable(html_path, "html report")
    lock_results(out / "demo.json")
    intro = Text("compilescope demo", style="bold")
    intro.append(f": built-in workload {workload!r}, inductor, cold cache, one fresh process per trial, "
                 f"verdict over {requests:,} requests")
    shown_on.print(intro)
    file = demo(workload, requests, out / "demo.json", progress=ConsoleProgress(shown_on))
    chosen = [Output(out / "demo.csv", "csv", "csv")]
    if html_path is not None:
        chosen.append(Output(html_path, "html", "html report"))
    show(file, shown_on, chosen)
    return ended(shown_on, file.report)
