"""`-` as an output path: compare --html writes the page to stdout with the report on stderr,
probe --trace takes one stdout output at a time, messages say "stdout" (never `-`), and
demo refuses a demo.html it must not write instead of quietly dropping the page."""

from __future__ import annotations

import pytest

FAST = ("--backend", "eager", "--samples", "3", "--budget", "0.01", "--warmup", "1")


def test_compare_html_to_stdout_puts_the_report_on_stderr(main, tmp_path):
    pytest.importorskip("plotly")
    for name in ("a", "b"):
        code, _, err = main("run", "sincos", "--stream", "16,32", "--strategies", "eager", *FAST, "--json", f"{name}.json")
        assert code == 0, err
    code, out, err = main("compare", "a.json", "b.json", "--html", "-")
    assert code == 0, err
    assert out.lstrip().lower().startswith("<!doctype html") and out.rstrip().endswith("</html>"), out[:200]
    assert "html report: stdout" in err and "html report: -" not in err
    assert not (tmp_path / "-").exists()


def test_probe_trace_takes_one_stdout_output_at_a_time(main, tmp_path):
    code, out, err = main("probe", "--trace", str(tmp_path), "--json", "-", "--html", "-")
    assert (code, out) == (2, "")
    assert err.strip() == "compilescope: error: only one output can be written to stdout: --json and --html are -"
    code, out, err = main("probe", "--trace", str(tmp_path), "--stream-out", "-", "--perfetto", "-")
    assert code == 2 and "--stream-out and --perfetto are -" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written, `-` no file


def test_demo_refuses_a_demo_html_that_leads_out_of_its_directory(main, tmp_path):
    pytest.importorskip("plotly")
    outside = tmp_path / "outside.html"
    outside.write_text("keep")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "demo.html").symlink_to(outside)
    code, out, err = main("demo", "--out", "out")
    assert code == 2 and err.count("\n") == 1 and "demo.html" in err and "outside its directory" in err, err
    assert outside.read_text() == "keep"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["demo.html"]  # nothing ran, no lock
    assert out == ""


PRINTS = '''
import torch
from compilescope import Workload

print("loaded")


def build():
    def f(x):
        print("called")
        return x + 1
    return f


wl = Workload("prints", build, lambda s: (torch.ones(s["n"]),), ("n",), ({"n": 4}, {"n": 8}))
'''


@pytest.mark.parametrize("command", [("forecast", "--strategies", "static", "--backend", "eager"),
                                     ("run", "--strategies", "default", *FAST),
                                     ("warmup", "--stream", "4,8", "--strategies", "static", "--backend", "eager",
                                      "--no-measure")])
def test_the_workloads_own_prints_never_reach_a_stdout_output(main, tmp_path, command):
    """``--json -``: stdout holds the JSON alone; the workload's prints, which this process
    runs (loading it, a dry run's calls), go to stderr."""
    import json

    (tmp_path / "prints.py").write_text(PRINTS)
    code, out, err = main(command[0], "prints.py:wl", *command[1:], "--json", "-")
    assert code == 0, err
    assert json.loads(out)["kind"] in ("forecast", "run", "warmup")
    assert "loaded" in err
