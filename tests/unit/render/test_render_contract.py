"""The renderer contract: renderers import only the report model (and the records and file
format it holds), units and errors — never analysis, capture, execution or strategies — and
are picked by name or by an output file's extension from one registry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import compilescope
from compilescope import render
from compilescope.errors import OptionError
from compilescope.report import (
    ForecastReport,
    AdviceReport,
    CompareReport,
    ProbeFile,
    RunFile,
    ScriptAdvice,
    VerifyReport,
)
from compilescope.report.warmup import WarmupReport

PACKAGE = Path(compilescope.__file__).parent
# what a renderer may import of compilescope: the report model, the records it holds and
# their file encoding (the results JSON), units, errors, and the other renderers
ALLOWED = ("compilescope.report", "compilescope.model", "compilescope.schema", "compilescope.units",
           "compilescope.errors", "compilescope.render")
# what the report model itself may import of compilescope: the records
ALLOWED_IN_REPORT = ("compilescope.report", "compilescope.model")


def imported(source: str, module: str) -> list[str]:
    """Every module ``source`` (the text of ``module``, dotted) imports, anywhere in it —
    inside functions too — relative imports made absolute."""
    package = module.rsplit(".", 1)[0] if not module.endswith("__init__") else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append(name)
            out += [f"{name}.{a.name}" for a in node.names if not node.module]  # from . import x
    return out


def forbidden(source: str, module: str, allowed: tuple[str, ...]) -> list[str]:
    return [name for name in imported(source, module)
            if (name == "compilescope" or name.startswith("compilescope."))
            and not any(name == a or name.startswith(a + ".") for a in allowed)]


def _modules(folder: str) -> list[tuple[str, Path]]:
    return [(f"compilescope.{folder}.{p.stem}", p) for p in sorted((PACKAGE / folder).glob("*.py"))]


def test_the_import_reader_catches_what_it_forbids():
    # the check below is only as good as this reader: it must see relative, absolute and local imports
    source = ("from ..analysis.build import build_run_report\nimport compilescope.execute.local\n"
              "def f():\n    from .. import strategies\n    from ..collect import graphs\n"
              "from ..report import RunReport\nfrom ..units import fmt_time\nfrom . import console\nimport json\n")
    bad = forbidden(source, "compilescope.render.x", ALLOWED)
    assert bad == ["compilescope.analysis.build", "compilescope.execute.local", "compilescope",
                   "compilescope.strategies", "compilescope.collect"]


@pytest.mark.parametrize(("module", "path"), _modules("render"), ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_a_renderer_imports_only_the_report_model_and_units(module, path):
    assert forbidden(path.read_text(encoding="utf-8"), module, ALLOWED) == []


@pytest.mark.parametrize(("module", "path"), _modules("report"), ids=lambda v: str(v).rsplit("/", 1)[-1])
def test_the_report_model_imports_only_the_records(module, path):
    assert forbidden(path.read_text(encoding="utf-8"), module, ALLOWED_IN_REPORT) == []


def test_every_renderer_module_is_registered_and_satisfies_the_protocol():
    registered = {r.name: r for r in render.renderers()}
    assert set(registered) == set(render.MODULES)
    modules = {p.stem for p in (PACKAGE / "render").glob("*.py")}
    # every module that defines a RENDERER is in the registry; the rest are helpers of one
    for stem in modules - {"__init__"}:
        text = (PACKAGE / "render" / f"{stem}.py").read_text(encoding="utf-8")
        assert ("\nRENDERER = " in text) == (f"compilescope.render.{stem}" in render.MODULES.values()), stem
    for name, r in registered.items():
        assert isinstance(r, render.Renderer), name
        assert r.extensions and all(ext.startswith(".") for ext in r.extensions) and r.kinds and r.written


@pytest.mark.parametrize(("path", "name"), [
    ("out.csv", "csv"), ("OUT.CSV", "csv"), ("out.json", "json"), ("out.html", "html"), ("out.htm", "html"),
    ("out.perfetto.json", "perfetto"), ("out.trace.json", "perfetto"), ("dir.v2/out.txt", "text"),
])
def test_an_output_path_picks_its_renderer_by_extension(path, name):
    assert render.for_path(Path(path)).name == name


def test_an_unknown_extension_is_one_line_naming_the_known_ones():
    with pytest.raises(OptionError) as caught:
        render.for_path(Path("out.xlsx"))
    message = str(caught.value)
    assert "\n" not in message and "'out.xlsx'" in message and ".csv" in message and ".trace.json" in message


def test_what_each_kind_of_report_can_be_written_as():
    kinds = {name: set(render.get(name).kinds) for name in render.MODULES}
    assert kinds["csv"] == {RunFile}
    assert kinds["json"] == {RunFile, ProbeFile, ForecastReport, WarmupReport, VerifyReport, CompareReport}
    assert kinds["perfetto"] == {RunFile, ProbeFile}
    assert CompareReport in kinds["html"] and ProbeFile in kinds["html"] and VerifyReport in kinds["html"]
    assert {RunFile, ProbeFile, CompareReport, AdviceReport, ScriptAdvice, ForecastReport, WarmupReport,
            VerifyReport} <= kinds["text"]
    assert WarmupReport in kinds["html"]


# ----------------------------------------------------------------------------- the CLI's one output path


def test_out_with_an_unknown_extension_is_one_line_and_exit_2(main, tmp_path):
    code, out, err = main("report", "results.json", "--out", "report.xlsx")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("compilescope: error: --out 'report.xlsx': unknown output format")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_out_dash_names_no_format(main, tmp_path):
    code, out, err = main("report", "results.json", "--out", "-")
    assert (code, out) == (2, "") and err.count("\n") == 1 and "--out - names no format" in err


def _results(tmp_path: Path) -> Path:
    """A results file written from hand-made records (no trial runs)."""
    from compilescope.model import CallRecord, RunResult, StrategyOptions, TrialResult, TrialSpec
    from compilescope.schema import dumps

    spec = TrialSpec("w", "eager", "cold", ({"n": 16}, {"n": 32}), StrategyOptions(backend="eager"))
    calls = (CallRecord(0, {"n": 16}, 2e-4), CallRecord(1, {"n": 32}, 3e-4))
    path = tmp_path / "results.json"
    path.write_text(dumps(RunResult(workload="w", stream=spec.stream, trials=(TrialResult(spec, "ok", calls=calls),))))
    return path


def test_out_picks_each_renderer_and_the_flags_are_its_aliases(main, tmp_path):
    import csv
    import json

    _results(tmp_path)
    code, out, err = main("report", "results.json", "--out", "a.csv", "--out", "a.trace.json", "--out", "a.txt",
                          "--out", "copy.json", "--csv", "b.csv")
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "a.csv").open()))
    assert [(r["strategy"], r["shape"]) for r in rows] == [("eager", "16"), ("eager", "32")]
    assert (tmp_path / "b.csv").read_text() == (tmp_path / "a.csv").read_text()  # --csv is --out *.csv
    trace = json.loads((tmp_path / "a.trace.json").read_text())
    assert [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"] == ["request 0 (16)", "request 1 (32)"]
    assert (tmp_path / "a.txt").read_text().startswith("w — per shape")
    copy = json.loads((tmp_path / "copy.json").read_text())
    (summary,) = copy["summary"].values()
    assert summary["status"] == "ok" and len(copy["trials"][0]["calls"]) == 2
    for line in ("csv: a.csv", "csv: b.csv", "perfetto trace: a.trace.json", "text report: a.txt",
                 "results JSON: copy.json"):
        assert line in out, out


def test_out_refuses_a_format_the_report_has_not(main, tmp_path):
    _results(tmp_path)
    code, out, err = main("compare", "results.json", "results.json", "--out", "c.csv")
    assert code == 2 and err.count("\n") == 1, err
    assert "--out c.csv: csv output is not made for a comparison (it writes: json, html, text)" in err
    assert not (tmp_path / "c.csv").exists()


def test_a_new_format_is_one_file_and_a_registry_line(main, tmp_path, monkeypatch):
    """``tests/formats_for_tests.py`` and its line in ``MODULES``, added at run time: the
    commands that make a run's report write it by its extension, --help names it, a command
    whose report it does not render refuses it naming what it writes, and what it needs is
    checked before anything runs."""
    from compilescope.cli import cli

    import tests.formats_for_tests as markdown

    monkeypatch.setitem(render.MODULES, "markdown", "tests.formats_for_tests")
    _results(tmp_path)
    code, out, err = main("report", "results.json", "--out", "r.md", "--out", "r.csv")
    assert code == 0, err
    assert (tmp_path / "r.md").read_text().splitlines()[:5] == [
        "# w", "", "| trial | status | verdict |", "|---|---|---|", "| eager (cold) | ok (2/2 requests) |  |"]
    assert "markdown report: r.md" in out and "csv: r.csv" in out
    helped = {name: next(p for p in cli.commands[name].params if p.name == "outs").help for name in ("run", "compare")}
    assert ".md (a markdown table)" in helped["run"] and ".md" not in helped["compare"]
    code, out, err = main("compare", "results.json", "results.json", "--out", "c.md")
    assert (code, err.count("\n")) == (2, 1) and "markdown output is not made for a comparison" in err, err
    code, out, err = main("report", "results.json", "--out", "r.xlsx")
    assert code == 2 and ".md" in err, err
    monkeypatch.setattr(markdown, "NEEDED", ["tabulate"])
    code, out, err = main("report", "results.json", "--out", "again.md")
    assert (code, err) == (2, "compilescope: error: the markdown report needs tabulate\n")
    assert not (tmp_path / "again.md").exists()


def test_two_outputs_on_one_file_are_refused_before_anything_is_written(main, tmp_path):
    _results(tmp_path)
    code, out, err = main("report", "results.json", "--out", "a.csv", "--csv", "a.csv")
    assert code == 2 and err.count("\n") == 1 and "a.csv" in err, err
    assert not (tmp_path / "a.csv").exists()


# ----------------------------------------------------------------------------- every JSON document, written alike


def _json_documents() -> dict[str, str]:
    from compilescope.render import json as json_render
    from compilescope.render import perfetto

    from .test_golden import compare_report, probe_report, run_file, run_report, script_advice

    return {"run": json_render.render(run_file()), "script advice": json_render.render_script_advice(script_advice()),
            "compare": json_render.render_compare(compare_report()),
            "run trace": perfetto.render_run(run_report()), "probe trace": perfetto.render_probe(probe_report())}


def test_every_json_document_ends_with_one_newline():
    import json

    for name, text in _json_documents().items():
        assert text.endswith("}\n") and not text.endswith("\n\n"), name
        json.loads(text)


def test_no_json_writer_writes_a_number_json_has_not():
    """A NaN or an infinity is never written as a token strict JSON readers refuse: a record's is
    null (``schema.to_data``), and any other is an error."""
    import json
    from dataclasses import replace

    from compilescope.render import json as json_render
    from compilescope.render import perfetto

    from .test_golden import compare_report, run_report, script_advice

    def strict(text: str) -> object:
        return json.loads(text, parse_constant=lambda word: pytest.fail(f"{word} written"))

    advice = script_advice()
    strict(json_render.render_script_advice(replace(advice, rows=(replace(advice.rows[0], wall_s=float("nan")),
                                                                  *advice.rows[1:]))))
    report = compare_report()
    strict(json_render.render_compare(replace(report, changes=(replace(report.changes[0], change=float("inf")),
                                                               *report.changes[1:]))))
    run = run_report()
    t = run.trials[0]
    nan_run = replace(run, trials=(replace(t, timeline=(replace(t.timeline[0], latency_s=float("nan")),
                                                        *t.timeline[1:])), *run.trials[1:]))
    with pytest.raises(ValueError, match="not JSON compliant"):
        perfetto.render_run(nan_run)
    with pytest.raises(ValueError, match="not JSON compliant"):
        json_render.write({"x": float("nan")})
