"""CLI conventions: --version, --help and completion without torch, `-` for stdout, tables that
never lose a value at any width, the advise result kept in the results JSON, graph breaks with
PyTorch's hints. The runs are real CLI subprocesses (eager / aot_eager backends), piped; their
trials are forked from a fork server (conftest.forked_trials): these tests read what the runs
print and record, never a cold start's time, and a forked trial compiles as a fresh one does."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from hypothesis import given, settings
from hypothesis import strategies as st

from compilescope.cli import PIPE_WIDTH, output_width
from compilescope.strategies import strategy_names
from compilescope.model import SCHEMA_VERSION
from compilescope.render.grid import Grid, T, to_text
from compilescope.units import fmt_time, n_star_text

from ..conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
QUICK = ("--samples", "5", "--budget", "0.05", "--warmup", "1")
pytestmark = pytest.mark.usefixtures("forked_trials")

PRINTING = '''
import torch
from compilescope import Workload


def printing() -> Workload:
    """sin, a print (a graph break), cos: two frames, each recompiling when n changes."""
    def build():
        def f(x):
            y = x.sin()
            print("between the halves")
            return y.cos()
        return f
    return Workload("printing", build, lambda s: (torch.randn(s["n"]),), ("n",), ({"n": 8},))
'''


def _cli(cwd: Path, *args: str, columns: int | None = 80, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The CLI as a user pipes it: stdout and stderr are pipes, not a terminal."""
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cwd / "inductor-cache"))
    return run_cli(*args, timeout=timeout, cwd=cwd, env=env)


def _flat(text: str) -> str:
    return " ".join(text.split())


# ----------------------------------------------------------------------------- the text a summary shows


def _records(text: str, names: set[str], after: str) -> dict[str, str]:
    """The one-record-per-line form of a table titled ``after`` (off a terminal): record name →
    its fields (``column: value · column: value …``)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == after)
    out: dict[str, str] = {}
    for line in lines[start + 1:]:
        name = next((n for n in names if line == n or line.startswith(n + " · ")), None)
        if name is None:
            break
        out[name] = line[len(name):].removeprefix(" · ")
    return out


def _on_a_line(part: str, text: str) -> bool:
    """``part`` is found whole on one line of ``text`` (as ``grep`` finds it)."""
    return any(part in line for line in text.splitlines())


def _fields(record: str, headers: list[str]) -> dict[str, str]:
    """``column: value`` fields of a flattened record, found by their column names in order."""
    found: list[tuple[int, str]] = []
    pos = 0
    for h in headers:
        at = record.find(f"{h}: ", pos)
        if at >= 0:
            found.append((at, h))
            pos = at + len(h) + 2
    out = {}
    for k, (at, h) in enumerate(found):
        end = found[k + 1][0] if k + 1 < len(found) else len(record)
        out[h] = record[at + len(h) + 2:end].strip().removesuffix("·").strip()
    return out


SUMMARY_COLUMNS = ["first call", "compiles (re)", "compile time", "graph breaks", "eager fallbacks",
                   "stream total (eager)", "break-even", "projected N*", "numerics"]


def _renderings(value: object) -> list[str]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [str(value), f"{value:,}"]
    if isinstance(value, float):
        return [fmt_time(value), f"×{value:.2f}", f"{value:.0%}", f"{value:.1%}", f"{value:.2f}"]
    if isinstance(value, str):
        return [value]
    return []


def assert_summary_shown(summary: dict[str, dict[str, object]], text: str) -> None:
    """Every value of the results JSON's summary appears in the report text, each where and as
    the console shows it; a key this does not know must appear in one of its usual forms."""
    from compilescope.analysis.verdict import _t as verdict_time
    from compilescope.analysis.verdict import verdict_text

    records = _records(text, set(summary), "per strategy")
    assert set(records) == set(summary), f"per-strategy records {sorted(records)} vs summary {sorted(summary)}"
    for label, s in summary.items():
        f = _fields(records[label], SUMMARY_COLUMNS)
        where = f"{label}: {records[label]!r}"
        compiled = label != "eager"
        checked = {"status"}
        if s["status"] != "ok":
            assert str(s["status"]) in records[label], where
            continue
        assert "first call" in f, where
        assert f["stream total (eager)"].startswith(fmt_time(s["stream_s"])), where  # type: ignore[arg-type]
        checked |= {"stream_s"}
        if compiled:
            assert f["compiles (re)"].startswith(f"{s['compiles']} ({s['recompiles']})"), where
            for key, word in (("refused_by_recompile_limit", "refused"), ("failed_compiles", "failed")):
                if s[key]:
                    assert f"{s[key]} {word}" in f["compiles (re)"], where
            if s["later_phase_compiles"]:
                assert f"+{s['later_phase_compiles']} later" in f["compiles (re)"], where
            assert f["compile time"] == fmt_time(s["compile_s"]), where  # type: ignore[arg-type]
            assert f["eager fallbacks"] == str(s["eager_fallbacks"]), where
            assert f["projected N*"] == n_star_text(s["n_star"], s["saving_per_request_s"],  # type: ignore[arg-type]
                                                    bool(s["saving_significant"]), bool(s["saving_beyond_band"])), where
            numerics = f["numerics"]
            if s["numerics_failed"]:
                assert f"{s['numerics_failed']} of {s['numerics_checked']} FAIL" in numerics, where
            elif s["numerics_checked"]:
                assert f"{s['numerics_checked']} pass" in numerics, where
            if s["numerics_not_comparable"] and not s["numerics_failed"]:
                assert f"{s['numerics_not_comparable']} n/a" in numerics, where
            assert _on_a_line(verdict_text(s["verdict"]), text), where  # type: ignore[arg-type]
            for key in ("steady_weighted_ratio", "steady_median_ratio"):
                if s[key] is not None:
                    assert _on_a_line(f"×{s[key]:.2f}", text), (key, where)
            if s["saving_per_request_s"] is not None:  # in the verdict, as the verdict writes times
                saving = abs(s["saving_per_request_s"])  # type: ignore[arg-type]
                assert _on_a_line(fmt_time(saving), text) or _on_a_line(verdict_time(saving), text), where
        for shape in s["eager_fallback_shapes"]:  # type: ignore[attr-defined]
            assert _on_a_line(shape, text), where
        checked |= {"compiles", "recompiles", "refused_by_recompile_limit", "failed_compiles", "later_phase_compiles",
                    "compile_s", "eager_fallbacks", "eager_fallback_shapes", "n_star", "saving_significant",
                    "saving_per_request_s", "numerics_checked", "numerics_failed", "numerics_not_comparable",
                    "verdict", "steady_weighted_ratio", "steady_median_ratio"}
        for key in set(s) - checked:  # added since: shown in one of the usual forms
            value = s[key]
            values = value if isinstance(value, list) else [value]
            for v in values:
                forms = _renderings(v)
                assert not forms or any(_on_a_line(form, text) for form in forms), (key, v, where)


def assert_advice_shown(advice: dict[str, object], text: str) -> None:
    rows = advice["rows"]
    assert isinstance(rows, list)
    records = _records(text, {r["label"] for r in rows},
                       next(ln.strip() for ln in text.splitlines() if ln.startswith("advise — objective")))
    assert set(records) == {r["label"] for r in rows}
    for r in rows:
        f = _fields(records[r["label"]], ["verdict", "compiles (re)", "compile time", "stream total", "fallbacks",
                                          "numerics", "score", "why"])
        assert f["verdict"] == r["verdict"] and f["why"] == r["why"], (r, f)
        assert f["score"] == (fmt_time(r["score"]) if r["score"] is not None else "—"), (r, f)
    rec = advice["recommendation"]
    if rec is not None:
        assert _on_a_line(f"recommended: {rec['label']}", text)
        for part in rec["snippet"].values():  # the code as it runs: once, before each call, then
            assert all(_on_a_line(line.strip(), text) for line in part.splitlines()), part
        row = next(r for r in rows if r["label"] == rec["label"])
        assert _on_a_line("addresses: " + "; ".join(row["addresses"]), text)
    for fix in advice["code_fixes"]:  # type: ignore[attr-defined]
        assert _on_a_line(f"- {fix['cause']}: {fix['step']}", text)


# ----------------------------------------------------------------------------- runs, once per module


@pytest.fixture(scope="module")
def piped_run(tmp_path_factory):
    """`run … --json -` piped at COLUMNS=80: the results on stdout, the report on stderr. The
    recompile limit of 1 makes shapes run eagerly (refusals, fallbacks), the print a graph break."""
    tmp = tmp_path_factory.mktemp("piped-run")
    (tmp / "wl.py").write_text(PRINTING)
    proc = _cli(tmp, "run", "wl.py:printing", "--stream", "8,8,16,16,32", "--strategies", "default,dynamic",
                "--recompile-limit", "1", "--backend", "eager", "--json", "-", *QUICK)
    assert proc.returncode == 0, proc.stderr
    return tmp, proc


@pytest.fixture(scope="module")
def piped_advise(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("piped-advise")
    proc = _cli(tmp, "advise", "sincos", "--stream", "16,16,32,32,64,16", "--backend", "aot_eager",
                "--json", "adv.json", *QUICK)
    assert proc.returncode == 0, proc.stderr
    return tmp, proc


def test_json_dash_writes_the_results_to_stdout_and_the_report_to_stderr(piped_run):
    tmp, proc = piped_run
    data = json.loads(proc.stdout)  # stdout is the results JSON and nothing else
    assert data["kind"] == "run" and data["schema_version"] == SCHEMA_VERSION
    assert {t["spec"]["strategy"] for t in data["trials"]} == {"eager", "default", "dynamic"}
    assert "per strategy" in proc.stderr and "per strategy" not in proc.stdout
    (kept,) = (tmp / "compilescope-results").glob("printing-*.json")  # each trial was saved as it finished
    assert json.loads(kept.read_text()) == data
    assert f"results: {kept.relative_to(tmp)}" in proc.stderr


def test_piped_run_at_80_columns_shows_every_summary_value(piped_run):
    _, proc = piped_run
    summary = json.loads(proc.stdout)["summary"]
    assert summary["default (cold)"]["refused_by_recompile_limit"] > 0  # the run exercises those cells
    assert summary["default (cold)"]["eager_fallbacks"] > 0
    assert_summary_shown(summary, proc.stderr)
    assert "…" not in proc.stderr
    reasons = {r for t in json.loads(proc.stdout)["trials"] for c in t["compiles"] for r in c["reasons"]}
    assert reasons and all(_on_a_line(r, proc.stderr) for r in reasons), reasons  # grep finds each guard


def test_report_at_80_columns_with_csv_to_stdout(piped_run):
    tmp, run = piped_run
    (tmp / "out.json").write_text(run.stdout)
    proc = _cli(tmp, "report", "out.json", "--csv", "-")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert {r["strategy"] for r in rows} == {"eager", "default", "dynamic"}
    assert "csv: stdout" in proc.stderr
    assert_summary_shown(json.loads(run.stdout)["summary"], proc.stderr)
    assert "…" not in proc.stderr


def test_piped_advise_and_report_show_every_value_and_the_same_advice(piped_advise):
    tmp, proc = piped_advise
    data = json.loads((tmp / "adv.json").read_text())
    assert_summary_shown(data["summary"], proc.stdout)
    assert_advice_shown(data["advice_summary"], proc.stdout)
    again = _cli(tmp, "report", "adv.json")
    assert again.returncode == 0, again.stderr
    assert_summary_shown(data["summary"], again.stdout)
    assert_advice_shown(data["advice_summary"], again.stdout)
    section = proc.stdout[proc.stdout.index("advise — objective"):]
    assert again.stdout[again.stdout.index("advise — objective"):] == section  # printed again, the same


def test_advise_results_json_keeps_every_proposal_and_loads_back(piped_advise):
    from compilescope.analysis.advise_record import advice_summary, rejudge
    from compilescope.analysis.build import build_run_report
    from compilescope.schema import load, loads

    tmp, _ = piped_advise
    data = json.loads((tmp / "adv.json").read_text())
    advice = data["advice"]
    assert advice["objective"] == "total"
    labels = {t["spec"]["strategy"] + (f"[{t['spec']['variant']}]" if t["spec"]["variant"] else "")
              for t in data["trials"]}
    assert advice["proposals"] and all(f"{p['strategy']}[{p['name']}]" in labels for p in advice["proposals"])
    assert {"mark-dynamic", "dynamic"} <= {p["strategy"] for p in advice["proposals"]}
    assert all(p["code"] and p["addresses"] for p in advice["proposals"])
    verdicts = {r["label"]: r["verdict"] for r in data["advice_summary"]["rows"]}
    # the default, each proposal, staying eager (always a candidate), and any reference trial advise ran
    assert verdicts["default (cold)"] == "baseline" and "eager" in verdicts
    judged = {label for label, verdict in verdicts.items() if verdict != "reference"}
    assert len(judged) == 2 + len(advice["proposals"]), verdicts
    # the judgement is derived again from the records, identically
    result = load(tmp / "adv.json")
    assert result.advice is not None and len(result.advice.proposals) == len(advice["proposals"])
    again = rejudge(result, build_run_report(result))
    assert again is not None and json.loads(json.dumps(advice_summary(again))) == data["advice_summary"]
    # a file written before advice was kept loads as before, with no advice
    older = {k: v for k, v in data.items() if k not in ("advice", "advice_summary")}
    assert loads(json.dumps(older)).advice is None  # type: ignore[union-attr]


def test_advice_judged_again_from_the_file_keeps_the_recompile_limit_its_trials_recorded(piped_advise):
    """report and the results JSON judge an advise run again from its records: a proposal that
    ends at the recompile limit the trials ran under is rejected there as advise rejected it."""
    import dataclasses

    from compilescope.analysis.advise import judge
    from compilescope.analysis.advise_record import rejudge
    from compilescope.analysis.build import build_run_report
    from compilescope.schema import load

    tmp, _ = piped_advise
    result = load(tmp / "adv.json")
    assert result.advice is not None
    # the same records, as a torch whose default limit is 1 would have recorded them
    result = dataclasses.replace(result, trials=tuple(
        dataclasses.replace(t, env=dataclasses.replace(t.env, recompile_limit_default=1)) for t in result.trials))
    report = build_run_report(result)
    again = rejudge(result, report)
    assert again is not None
    at_limit = [r.label for r in again.rows if r.why.startswith("at the recompile limit")]
    assert at_limit, [(r.label, r.verdict, r.why) for r in again.rows]
    proposals = [p for p in again.rows if p.proposal is not None and p.label in at_limit]
    live = judge(report, [p.proposal for p in proposals], result.advice.objective, result.lifetime, [],
                 recompile_limit=1, result=result)
    assert {r.label: r.why for r in live.rows if r.label in at_limit} == \
        {r.label: r.why for r in again.rows if r.label in at_limit}


def test_graph_breaks_show_the_first_line_and_hints_and_html_all(piped_run):
    from html import escape

    from compilescope.analysis.breaks import split_break_text

    tmp, run = piped_run
    data = json.loads(run.stdout)
    default = next(t for t in data["trials"] if t["spec"]["strategy"] == "default")
    text = default["graph_breaks"][0]["reason"]  # the record keeps PyTorch's whole text
    parts = split_break_text(text)
    assert parts.headline == "Failed to trace builtin operator"
    assert parts.explanation and "print" in parts.explanation
    assert parts.hints and all(h in text for h in parts.hints)
    flat = _flat(run.stderr)
    assert parts.headline in flat and all(_flat(f"hint: {h}") in flat for h in parts.hints)
    assert parts.explanation not in flat  # the console keeps to the first line and the hints
    (tmp / "out.json").write_text(run.stdout)
    proc = _cli(tmp, "report", "out.json", "--html", "r.html")
    assert proc.returncode == 0, proc.stderr
    page = (tmp / "r.html").read_text()
    assert escape(parts.explanation) in page and all(escape(h) in page for h in parts.hints)
    assert parts.url is None or escape(parts.url) in page


def test_only_one_output_can_be_stdout(tmp_path):
    proc = _cli(tmp_path, "run", "sincos", "--json", "-", "--csv", "-")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == "compilescope: error: only one output can be written to stdout: --json and --csv are -"


# ----------------------------------------------------------------------------- --help, --version, completion


def test_help_version_and_completion_do_not_import_torch(tmp_path):
    code = r"""
import io, json, os, sys, contextlib
from compilescope.cli import main
out = {}
for argv in (["--help"], ["--version"], ["run", "--help"], ["advise", "--help"], ["probe", "--help"]):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
    out[" ".join(argv)] = [rc, buf.getvalue()]
out["torch"] = "torch" in sys.modules
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out.pop("torch") is False
    # a TAB: click answers from the environment and exits; torch is still not imported then
    complete = ("import atexit, sys; atexit.register(lambda: print('torch imported:', 'torch' in sys.modules, "
                "file=sys.stderr)); from compilescope.cli import main; main()")
    env = dict(os.environ, _COMPILESCOPE_COMPLETE="bash_complete", COMP_WORDS="compilescope run --strategies default,st",
               COMP_CWORD="3")
    tab = subprocess.run([sys.executable, "-c", complete], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env=env)
    assert tab.stdout.split() == ["plain,default,static"] and "torch imported: False" in tab.stderr, tab
    import compilescope

    rc, version = out["--version"]
    assert rc == 0 and version.startswith(f"compilescope {compilescope.__version__} (torch ")
    assert out["--help"][0] == 0 and "--version" in out["--help"][1] and "advise" in out["--help"][1]
    # help text wraps after a hyphen (guard-filter[tensors-only] can end a line at "tensors-")
    unwrapped = "-".join(part.lstrip() for part in out["run --help"][1].split("-\n"))
    assert all(name in _flat(unwrapped) for name in strategy_names())


def test_version_is_the_package_version():
    import tomllib

    import compilescope

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert compilescope.__version__ == declared


def test_import_compilescope_is_lazy_and_keeps_the_public_api(tmp_path):
    code = r"""
import sys, json
import compilescope
lazy = "torch" not in sys.modules
names = {name: type(getattr(compilescope, name)).__name__ for name in compilescope.__all__}
import compilescope.watch  # the submodule of the same name: the attribute stays the function
print(json.dumps({"lazy": lazy, "names": names, "watch": type(compilescope.watch).__name__,
                  "star": sorted(k for k in __import__("compilescope").__dict__ if k in compilescope.__all__)}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["lazy"] is True
    assert out["watch"] == "function" and out["names"]["watch"] == "function"
    assert out["names"]["run"] == "function" and out["names"]["RunResult"] == "type"
    assert out["names"]["SCHEMA_VERSION"] == "int"
    assert sorted(out["star"]) == sorted(out["names"])


def test_completion_script_is_documented():
    for doc in (ROOT / "docs" / "cli.md", ROOT / "README.md"):
        assert "_COMPILESCOPE_COMPLETE=bash_source compilescope" in doc.read_text(), doc


# ----------------------------------------------------------------------------- widths


def test_output_width_terminal_then_columns_then_100(tmp_path):
    assert PIPE_WIDTH == 100
    pipe = io.StringIO()
    assert output_width(pipe, {}) == 100
    assert output_width(pipe, {"COLUMNS": "80"}) == 80
    assert output_width(pipe, {"COLUMNS": "junk"}) == 100
    leader, follower = os.openpty()
    try:
        with os.fdopen(follower, "w", closefd=False) as tty:
            assert output_width(tty, {"COLUMNS": "80"}) is None  # a terminal: rich measures it
    finally:
        os.close(leader)
        os.close(follower)


# no "┃" in a cell: the test below tells a table from records by that character
words = st.text(alphabet=st.characters(categories=("L", "N", "P", "S"), exclude_characters="·…┃"), min_size=1,
                max_size=12)
cells = st.lists(words, min_size=0, max_size=14).map(" ".join)


@settings(max_examples=100, deadline=None, database=None)  # no .hypothesis/ in the working directory
@given(ncols=st.integers(2, 10), data=st.data(), width=st.integers(30, 200))
def test_a_grid_loses_no_value_at_any_width(ncols, data, width):
    headers = [f"col{i} name" for i in range(ncols)]
    rows = data.draw(st.lists(st.lists(cells, min_size=ncols, max_size=ncols), min_size=1, max_size=6))
    keep = data.draw(st.sets(st.sampled_from(headers)))
    grid = Grid(T("title"), [(h, data.draw(st.sampled_from(["left", "right"]))) for h in headers],
                keys=data.draw(st.integers(0, 2)), keep=sorted(keep))
    for row in rows:
        grid.add_row(*[T(c) for c in row])
    text = to_text([grid], width, terminal=True)
    assert "…" not in text
    assert max(cell_len(line.rstrip()) for line in text.splitlines()) <= width  # terminal cells, as rich lays out
    shown = text.split()
    for row in rows:
        for c in row:
            for word in c.split():
                assert word in shown, (word, text)  # whole: a table cell wraps at spaces, never inside a word


@settings(max_examples=100, deadline=None, database=None)
@given(ncols=st.integers(2, 10), data=st.data(), width=st.integers(30, 200))
def test_off_a_terminal_a_grid_wraps_no_cell(ncols, data, width):
    headers = [f"col{i} name" for i in range(ncols)]
    rows = data.draw(st.lists(st.lists(cells, min_size=ncols, max_size=ncols), min_size=1, max_size=6))
    grid = Grid(T("title"), [(h, "left") for h in headers], keys=data.draw(st.integers(0, 2)),
                keep=sorted(data.draw(st.sets(st.sampled_from(headers)))))
    for row in rows:
        grid.add_row(*[T(c) for c in row])
    text = to_text([grid], width)
    lines = text.splitlines()
    for row in rows:
        assert all(any(c in line for line in lines) for c in row), (row, text)  # each cell whole on one line
    if "┃" in text:  # a table only when every row fits the width unwrapped
        assert max(cell_len(line.rstrip()) for line in lines) <= width and len(lines) == len(rows) + 5, text
    else:  # else one record per line, after the title
        assert len(lines) == len(rows) + 1, text


def test_a_grid_is_a_table_when_it_fits_and_records_when_not():
    grid = Grid(T("per thing"), [("name", "left"), ("value", "right"), ("why", "left")])
    grid.add_row(T("alpha"), T("1.5 ms"), T("a reason with several words"))
    wide = to_text([grid], 120, terminal=True)
    assert "┃ name" in wide and "alpha" in wide
    narrow = to_text([grid], 16, terminal=True)
    assert "┃" not in narrow and "alpha" in narrow and "value: 1.5 ms" in narrow
    assert "why: a reason" in _flat(narrow)
    # fits unwrapped: the same table off a terminal
    assert [ln.rstrip() for ln in to_text([grid], 120).splitlines()] == [ln.rstrip() for ln in wide.splitlines()]
    piped = to_text([grid], 40)  # off a terminal: one record per line, never wrapped
    assert piped.splitlines() == ["per thing", "alpha · value: 1.5 ms · why: a reason with several words"]


@pytest.mark.parametrize("command, kinds", [
    ("run", ("RunFile",)), ("advise", ("RunFile",)), ("report", ("RunFile", "ProbeFile")), ("probe", ("ProbeFile",)),
    ("compare", ("CompareReport",)), ("forecast", ("ForecastReport",)), ("warmup", ("WarmupReport",)),
])
def test_out_help_names_exactly_the_formats_the_command_writes(command, kinds):
    from compilescope.cli import FORMAT_HELP, cli
    from compilescope.render import renderers

    option = next(p for p in cli.commands[command].params if p.name == "outs")
    listed = {name for name, text in FORMAT_HELP.items() if text in option.help}
    writes = {r.name for r in renderers() if any(k.__name__ in kinds for k in r.kinds)}
    assert listed == writes, option.help
