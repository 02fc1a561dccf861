"""The HTML report in a real browser (headless Chromium from Debian's packages), the Perfetto
trace, and compare. Browser tests skip, with the reason, where no chromium is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
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


def _cli(*args, cwd, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "compilescope.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def chromium(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=8000", *extra, url],
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
    probe = _cli("probe", "--html", str(tmp / "p.html"), str(HERE / "probe_scenarios" / "two_functions.py"), cwd=tmp)
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
    assert "</script><img" not in scripts and "\\u003c/script\\u003e" in scripts


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
    same = _cli("compare", str(runs["a"]), str(runs["b"]), "--fail-on-regression", "5%", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "no regression beyond the noise" in same.stdout
    slow = _cli("compare", str(runs["a"]), str(runs["slow"]), "--fail-on-regression", "5%",
                "--html", str(tmp_path / "cmp.html"), cwd=tmp_path)
    assert slow.returncode == 1, slow.stdout + slow.stderr
    assert "regression" in slow.stdout and "steady p50 / eager" in slow.stdout
    assert (tmp_path / "cmp.html").exists()
