"""Every string from user code that the HTML page hands to plotly (trace names, category
labels, bar texts, hover texts) is escaped: plotly reads them as markup, so a trial label or a
function name of ``<b>…`` must reach the page as text. Read from the figures' own data."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from compilescope.render import get
from compilescope.report import ProbeFile, RunFile

from .test_golden import HOSTILE, compare_report, probe_report, run_file, run_report

pytest.importorskip("plotly")

SHOWN = ("name", "x", "y", "text", "hovertext")  # what plotly draws as text (legendgroup and meta are not)


def figures(page: str) -> list[list[dict[str, Any]]]:
    """Each ``Plotly.newPlot`` call's traces, decoded."""
    out = []
    decoder = json.JSONDecoder()
    for part in page.split("Plotly.newPlot(")[1:]:
        at = part.index(", ") + 2  # after the div's id
        data, _ = decoder.raw_decode(part, at)
        out.append(data)
    return out


def markup(page: str) -> list[str]:
    """The strings plotly draws that carry a tag other than the page's own line breaks."""
    found = []
    for traces in figures(page):
        for trace in traces:
            for key in SHOWN:
                value = trace.get(key)
                for s in value if isinstance(value, list) else [value]:
                    if isinstance(s, str) and "<" in s.replace("<br>", ""):
                        found.append(f"{key}: {s}")
    return found


def _hostile_run() -> RunFile:
    report = run_report()
    trials = tuple(replace(t, label=f"{t.label} {HOSTILE}", rows=tuple(replace(r, shape=f"{r.shape} {HOSTILE}")
                                                                       for r in t.rows))
                   for t in report.trials)
    return RunFile(run_file().result, replace(report, trials=trials))


def test_the_run_page_hands_plotly_no_user_markup():
    page = get("html").render(_hostile_run())
    assert len(figures(page)) >= 4
    assert markup(page) == []
    assert f"default (cold) {HOSTILE}".replace("<", "&lt;").replace(">", "&gt;") in page.replace("\\u003c", "<").replace(
        "\\u003e", ">").replace("\\u0026", "&")  # the label is there, as text


def test_the_probe_and_compare_pages_hand_plotly_no_user_markup():
    probe = get("html").render(ProbeFile(None, probe_report()))  # type: ignore[arg-type]
    assert figures(probe) and markup(probe) == []
    report = compare_report()
    changes = tuple(replace(c, trial=f"{c.trial} {HOSTILE}", shape=f"{c.shape} {HOSTILE}") for c in report.changes)
    compare = get("html").render(replace(report, changes=changes))
    assert figures(compare) and markup(compare) == []
