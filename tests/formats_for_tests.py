"""An output format added the way a new one is: this file, and one line in
``compilescope.render.MODULES`` (``tests/unit/render/test_render_contract.py`` adds the line
when it runs). It formats the report model and decides nothing, as every renderer."""

from __future__ import annotations

from compilescope.errors import OptionError
from compilescope.render import ByKind
from compilescope.report import RunFile

NEEDED: list[str] = []  # set by a test: what the format "needs" and is missing


def _run(file: RunFile) -> str:
    assert file.report is not None
    rows = [f"| {t.label} | {t.status_text} | {t.verdict_text} |" for t in file.report.trials]
    return "\n".join([f"# {file.report.workload}", "", "| trial | status | verdict |", "|---|---|---|", *rows]) + "\n"


def _requires() -> None:
    if NEEDED:
        raise OptionError(f"the markdown report needs {NEEDED[0]}")


RENDERER = ByKind("markdown", (".md",), "markdown report", {RunFile: _run}, help=".md (a markdown table)",
                  requires=_requires)
