"""The HTML report in a real browser (headless Chromium from Debian's packages), the Perfetto
trace, and compare. Browser tests skip, with the reason, where no chromium is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from ..conftest import cli_here, run_cli

HERE = Path(__file__).resolve().parents[1]  # tests/
TEST_WORKLOADS = HERE / "workloads_for_tests.py"
QUICK = ("--samples", "5", "--budget", "0.05", "--warmup", "1")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (apt-get install chromium)")
pytest.importorskip("plotly", reason="the html extra is not installed (pip install 'compilescope[html]')")

INJECTION = "<img src=x onerror=alert(1)>"
INJECT_WORKLOAD = '''
import torch
from compilescope import Workload


def build():
    def f(x, n):
        return x * n  # </script><img src=x onerror=alert(1)> <b>bold?</b>
    return f


w = Workload("inject</script><img src=x onerror=alert(1)>", build,
             lambda s: (torch.ones(4), s["n"]), ("n",), ({"n": 2}, {"n": 3}, {"n": 2}))
'''


def _cli(*args, cwd, env=None):
    """run, report and compare in this process (their trials are processes of their own)."""
    return cli_here(*args, cwd=cwd, env=env)


def _cli_process(*args, cwd, env=None, timeout=600):
    """probe, which forks, as a process of its own."""
    return run_cli(*args, cwd=cwd, env=env, timeout=timeout)


def chromium(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:  # never the user's profile
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--user-data-dir={profile}", "--no-first-run", "--enable-logging=stderr", "--v=0",
                               "--virtual-time-budget=8000", *extra, url],
                              capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def report_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("html")
    folder = tmp / f"dir{INJECTION}"
    folder.mkdir()
    (folder / "w.py").write_text(INJECT_WORKLOAD)
    out = tmp / "r.json"
    proc = _cli("run", f"{folder / 'w.py'}:w", "--strategies", "default,static", "--backend", "eager", *QUICK,
                "--json", str(out), "--html", str(tmp / "r.html"), "--perfetto", str(tmp / "r.trace.json"), cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    probe = _cli_process("probe", "--html", str(tmp / "p.html"), str(HERE / "probe_scenarios" / "two_functions.py"), cwd=tmp)
    assert probe.returncode == 0, probe.stderr
    return tmp


def test_the_page_is_self_contained(report_files):
    import re

    page = (report_files / "r.html").read_text()
    tags = re.sub(r"<script>.*?</script>", "<script></script>", page, flags=re.S)  # the page's own markup
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", tags)  # nothing loads from outside
    assert len(page) > 1_000_000 and "Plotly.newPlot" in page  # plotly.js is inlined: it opens offline
    assert tags.count('class="plot"') >= 4


@needs_browser
@pytest.mark.parametrize("name, plots", [("r.html", 4), ("p.html", 1)])
def test_every_plot_renders_without_console_errors(report_files, name, plots):
    url = (report_files / name).as_uri()
    dom = chromium(url, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('class="main-svg"') >= plots  # plotly drew an <svg> in each plot
    assert "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    shot = report_files / f"{name}.png"
    chromium(url, f"--screenshot={shot}", "--window-size=1400,2400")
    assert shot.exists() and shot.stat().st_size > 20_000
    print(f"screenshot: {shot}")


@needs_browser
def test_hostile_text_is_inert_in_the_dom(report_files):
    dom = chromium((report_files / "r.html").as_uri(), "--dump-dom").stdout
    assert "<img" not in dom.replace("&lt;img", "")  # no element was injected
    assert "<b>bold?</b>" not in dom
    assert "&lt;img src=x onerror=alert(1)&gt;" in dom  # …the text is there, as text
    data = (report_files / "r.html").read_text()
    scripts = data.split("<script>")[2]  # the plot data: JSON inside <script>, with < and > escaped
    # hover text is escaped for plotly (which reads it as markup), and the JSON cannot end the script
    assert "</script><img" not in scripts and "\\u0026lt;/script\\u0026gt;" in scripts


def test_perfetto_trace_is_loadable(report_files):
    trace = json.loads((report_files / "r.trace.json").read_text())
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert complete and all({"ts", "dur", "pid", "tid", "name"} <= set(e) for e in complete)
    assert {e["cat"] for e in complete} >= {"request", "compile", "compile phase"}
    assert any(e["ph"] == "i" and e["name"].startswith("recompile") for e in events)
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert names == {"eager", "default (cold)", "static (cold)"}


def test_compare_flags_nothing_between_two_runs_and_an_injected_slowdown_exits_1(tmp_path):
    ref = f"{TEST_WORKLOADS}:compiled_slowdown"
    args = ("--strategies", "default", "--backend", "eager", "--samples", "30", "--budget", "0.5", "--warmup", "3")
    runs = {}
    for name, slow in (("a", ""), ("b", ""), ("slow", "1")):
        env = dict(os.environ, COMPILESCOPE_TEST_SLOWDOWN=slow)
        proc = _cli("run", ref, *args, "--json", str(tmp_path / f"{name}.json"), cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
        runs[name] = tmp_path / f"{name}.json"
    from compilescope.analysis.compare import compare_runs
    from compilescope.schema import load

    # two runs of the same code: nothing exact (status, counts) moves and no speedup is flagged;
    # timed figures across two processes (first call, compile s, speedup) may move on a loaded machine,
    # where timing is bimodal per process, so only the exact figures are asserted
    same = compare_runs(load(runs["a"]), load(runs["b"]))
    assert not [c for c in same.changes if c.figure in ("status", "request errors", "eager fallbacks", "compiles")
                and c.flag]
    slow = _cli("compare", str(runs["a"]), str(runs["slow"]), "--fail-on-regression", "5%",
                "--html", str(tmp_path / "cmp.html"), cwd=tmp_path)
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "regression" in slow.stdout and "speedup" in slow.stdout
    assert (tmp_path / "cmp.html").exists()


# ----------------------------------------------------------------------------- a mixed run

MIXED_WORKLOAD = """
import os

import torch

from compilescope import Workload


def build():
    die = bool(os.environ.get("MIXED_DIE"))

    @torch.compiler.disable
    def check(n):
        if n == 7:
            raise ValueError("seven is not allowed")  # every trial's request of size 7 raises

    def f(x):
        n = x.shape[0]
        check(n)
        y = x.sin()
        if torch.compiler.is_compiling():
            if die and n == 1024:
                os._exit(3)  # this trial's process dies in that request
            if n >= 256:
                for _ in range(4):  # compiled code carries extra ops on the large shapes
                    y = y * 1.0
        elif n < 256:
            for _ in range(40):  # eager carries them on the small shapes
                y = y * 1.0
        return y

    return f


w = Workload("mixed", build, lambda s: (torch.randn(s["n"]),), ("n",),
             tuple({"n": n} for n in (8, 8, 16, 7, 1024, 2048, 8, 1024)))
"""


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    """One run's records: eager and static (some shapes faster compiled, some slower, a request
    of size 7 raising in every trial) and a default trial whose process died in request 4,
    taken from a second run of the same workload and stream. Rendered by `report`."""
    tmp = tmp_path_factory.mktemp("mixed")
    (tmp / "mixed.py").write_text(MIXED_WORKLOAD)
    ref = f"{tmp / 'mixed.py'}:w"
    quick = ("--backend", "eager", "--samples", "7", "--budget", "0.1", "--warmup", "2")
    first = _cli("run", ref, "--strategies", "static", *quick, "--json", str(tmp / "a.json"), cwd=tmp)
    assert first.returncode == 0, first.stderr
    dying = _cli("run", ref, "--strategies", "default", *quick, "--json", str(tmp / "b.json"), cwd=tmp,
                 env=dict(os.environ, MIXED_DIE="1", COMPILESCOPE_PASS_ENV="MIXED_DIE"))
    assert dying.returncode == 1, dying.stdout + dying.stderr  # the failed trial is the exit status
    a, b = (json.loads((tmp / name).read_text()) for name in ("a.json", "b.json"))
    died = next(t for t in b["trials"] if t["spec"]["strategy"] == "default")
    assert died["status"] == "failed" and len(died["calls"]) == 4
    a["trials"].append(died)
    a.pop("summary", None)
    (tmp / "mixed.json").write_text(json.dumps(a))
    proc = _cli("report", str(tmp / "mixed.json"), "--html", str(tmp / "mixed.html"), "--perfetto",
                str(tmp / "mixed.trace.json"), cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return tmp


def _cells(table_html: str) -> list[list[str]]:
    import html as html_module
    import re

    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", table_html, re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
        rows.append([html_module.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in cells])
    return rows


def _shape_table(dom: str, trial: str) -> dict[str, dict[str, str]]:
    import html as html_module
    import re

    m = re.search(r'<table class="shapes" data-trial="' + re.escape(html_module.escape(trial)) + r'">(.*?)</table>',
                  dom, re.S)
    assert m, f"no per-shape table for {trial}"
    head, *rows = _cells(m.group(1))
    return {r[0]: dict(zip(head, r)) for r in rows}


def _plot_data(page: str, div: str) -> list[dict]:
    """The traces the page hands to Plotly.newPlot for ``div`` (in the order it draws them)."""
    import re

    m = re.search(r"Plotly\.newPlot\(" + json.dumps(div) + r", (\[.*?\]), \{", page, re.S)
    assert m
    return json.loads(m.group(1))


def _drawn_bars(dom: str, div: str) -> list[list[float]]:
    """Per bar trace, as drawn in the browser's SVG: each bar's height in pixels."""
    import re

    start = dom.index(f'id="{div}"')
    end = dom.find(' id="plot', start + 10)
    svg = dom[start:end if end > 0 else None]
    out = []
    for group in re.split(r'<g class="trace bars"', svg)[1:]:
        group = group.split('<g class="trace ', 1)[0]
        heights = []
        for d in re.findall(r'<g class="point"><path d="M([^"]+)"', group):
            nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", d)]
            heights.append(abs(nums[1] - nums[2]))  # M x0,y0 V y1 H x1 V y0 Z
        out.append(heights)
    return out


@needs_browser
def test_a_mixed_runs_steady_chart_agrees_with_its_table_and_failures_are_bannered(mixed_run):
    url = (mixed_run / "mixed.html").as_uri()
    got = chromium(url, "--dump-dom")
    assert got.returncode == 0 and "Uncaught" not in got.stderr, got.stderr[-2000:]
    dom = got.stdout
    page = (mixed_run / "mixed.html").read_text()

    # the banner names the dead trial with its status and every trial whose requests raised
    import re

    banner = re.search(r'<div class="banner" id="failure-banner" role="alert">(.*?)</div>', dom, re.S)
    assert banner, "no failure banner"
    assert 'data-trial="default (cold)" data-status="failed"' in banner.group(1)
    assert "4 of 8 requests completed and kept" in banner.group(1)
    for label in ("eager", "static (cold)"):
        # one of their requests raised: partial, never ok
        assert f'data-trial="{label}" data-status="partial"' in banner.group(1)
    assert "1 of 8 request(s) raised (first: shape 7: ValueError: seven is not allowed)" in banner.group(1)

    # the steady chart: the static trial's compiled p50 beside its own process's eager p50, per shape
    div = re.search(r'<div class="plot" id="(plot\d+)" data-caption="steady state">', page).group(1)
    traces = _plot_data(page, div)
    bars = [t for t in traces if t.get("type") == "bar"]
    assert [t["name"] for t in bars] == ["static (cold)", "static (cold): eager, same process"]  # no other process
    drawn = _drawn_bars(dom, div)
    assert len(drawn) == 2 and len(drawn[0]) == len(bars[0]["x"]) == len(drawn[1]) == 4
    table = _shape_table(dom, "static (cold)")
    speed = "speedup (eager / compiled)"
    faster = slower = 0
    for shape, label, h_compiled, h_eager in zip(bars[0]["x"], bars[0]["text"], drawn[0], drawn[1]):
        row = table[shape]
        assert label == row[speed]  # the bar's label is the table's figure
        table_ratio = float(row[speed].lstrip("×"))
        assert h_compiled > 0 and h_eager > 0
        assert (h_eager > h_compiled) == (table_ratio > 1), (shape, h_compiled, h_eager, row)
        assert h_eager / h_compiled == pytest.approx(table_ratio, rel=0.03, abs=0.006), (shape, row)
        faster += table_ratio > 1
        slower += table_ratio < 1
    print(f"static (cold): {faster} shape(s) faster compiled, {slower} slower")
    # the request that raised has no steady figure: marked on the chart, not dropped
    marks = [t for t in traces if t.get("name") == "static (cold): no compiled figure"]
    assert marks and marks[0]["x"] == ["7"]
    assert table["7"]["how it ran / cause"].startswith("error: ValueError: seven is not allowed")
    # the dead trial's shapes are marked too
    dead = [t for t in traces if t.get("name") == "default (cold): no compiled figure"]
    assert dead and set(dead[0]["x"]) == {"8", "16", "7"}

    # the timeline marks each request that raised and where the default trial died
    timeline = _plot_data(page, "plot0")
    raised = {t["name"]: t["x"] for t in timeline if t["name"].endswith(": request raised")}
    assert raised == {"eager: request raised": [3], "static (cold): request raised": [3],
                      "default (cold): request raised": [3]}
    assert any(t["name"] == "default (cold): trial failed" and t["x"] == [4] for t in timeline)

    # noise marks and numerics, as in the console
    summary = _cells(re.search(r'<table class="summary">(.*?)</table>', dom, re.S).group(1))
    head = summary[0]
    assert "numerics" in head
    static = next(r for r in summary if r[0] == "static (cold)")
    assert static[head.index("numerics")] == "4 pass" and "1 of 8 raised" in static[head.index("first call")]
    results = json.loads((mixed_run / "mixed.json").read_text())
    trial = next(t for t in results["trials"] if t["spec"]["strategy"] == "static")
    import statistics

    def noisy(samples):
        q = statistics.quantiles(samples, n=4, method="inclusive")
        return (q[2] - q[0]) / statistics.median(samples) > 0.10

    for st in trial["steady"]:
        shape = str(st["shape"]["n"])
        if not st["compiled_s"]:
            continue
        assert table[shape]["p50 ±IQR/2"].endswith("~") == noisy(st["compiled_s"]), (shape, table[shape])
        assert table[shape]["eager p50 (same process)"].endswith("~") == noisy(st["eager_s"]), (shape, table[shape])
        assert table[shape]["numerics: max abs err"] == "0.0e+00"

    shot = mixed_run / "mixed.png"
    chromium(url, f"--screenshot={shot}", "--window-size=1400,3200")
    assert shot.exists() and shot.stat().st_size > 50_000
    print(f"screenshot: {shot}")


def test_perfetto_places_failed_requests_where_they_ran(mixed_run):
    trace = json.loads((mixed_run / "mixed.trace.json").read_text())
    events = trace["traceEvents"]
    pids = {e["args"]["name"]: e["pid"] for e in events if e["ph"] == "M"}
    for label in ("eager", "static (cold)", "default (cold)"):
        requests = sorted((e for e in events if e["pid"] == pids[label] and e["ph"] == "X"
                           and e["cat"] in ("request", "request error")), key=lambda e: e["ts"])
        assert [e["name"].split(" (")[0] for e in requests] == [f"request {i}" for i in range(len(requests))]
        for before, after in zip(requests, requests[1:]):
            assert after["ts"] >= before["ts"] + before["dur"] - 1e-6  # back to back, none on top of another
        failed = [e for e in requests if e["cat"] == "request error"]
        assert [e["name"] for e in failed] == ["request 3 (7) raised"]
        assert failed[0]["args"]["error"] == "ValueError: seven is not allowed"
        compiles = [e for e in events if e["pid"] == pids[label] and e.get("cat") == "compile"]
        inside = [c for c in compiles if failed[0]["ts"] <= c["ts"] < failed[0]["ts"] + max(failed[0]["dur"], 1)]
        assert failed[0]["dur"] >= sum(c["dur"] for c in inside) - 1e-6  # its compiles fit inside it
        assert any(e["ph"] == "i" and e["name"] == "request raised at request 3" for e in events
                   if e["pid"] == pids[label])
    died = [e for e in events if e["pid"] == pids["default (cold)"] and e["ph"] == "i" and e["name"].startswith("trial")]
    assert [e["name"] for e in died] == ["trial failed in request 4"]


def test_plot_hover_text_shows_pytorch_strings_as_text(mixed_run):
    """Plotly reads hover text as markup: a ``<module>`` in a request's error, a guard reason
    or a dead trial's error reaches the figure JSON escaped, with only the ``<br>`` breaks raw."""
    import re
    from dataclasses import replace

    from compilescope.analysis.build import build_run_report
    from compilescope.render.html import render_run
    from compilescope.schema import loads

    text = (mixed_run / "mixed.json").read_text().replace("seven is not allowed", "seven <module> & <lambda>")
    report = build_run_report(loads(text))
    trials = tuple(replace(t, timeline=tuple(replace(p, reasons=("size of x in <module>",)) if p.event else p
                                             for p in t.timeline),
                           error="died in <module>" if t.status == "failed" else t.error)
                   for t in report.trials)
    page = render_run(replace(report, trials=trials))
    texts = []
    for div in re.findall(r'Plotly\.newPlot\("(plot\d+)"', page):
        for trace in _plot_data(page, div):
            for key in ("hovertext", "text"):
                texts += [s for s in (trace.get(key) or ()) if isinstance(s, str)]
    assert any("raised: ValueError: seven &lt;module&gt; &amp; &lt;lambda&gt;" in s for s in texts), texts
    assert any("· size of x in &lt;module&gt;" in s for s in texts)
    assert any("died in &lt;module&gt;" in s for s in texts)
    assert not [s for s in texts if "<module>" in s or "<lambda>" in s]
    assert any("<br>" in s for s in texts)  # the line breaks stay markup
