"""Friction removed: `report --json -` and `report --fail-on`, completion of workload names and
script paths, probe saying when its own options went to the script, and messages that say
what happened (a whole sentence, no cache state or compile time for what compiled nothing,
overlapping cause counts said so, one duration format)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path


from compilescope.analysis.build import build_probe_report, build_run_report
from compilescope.analysis.verdict import verdict_text
from compilescope.model import SCHEMA_VERSION
from compilescope.schema import load

DATA = Path(__file__).resolve().parents[1] / "data" / "derivations"


def test_report_writes_the_results_json_to_stdout_with_the_report_on_stderr(main):
    code, out, err = main("report", str(DATA / "run_sincos.json"), "--json", "-")
    assert code == 0, err
    data = json.loads(out)
    assert data["schema_version"] == SCHEMA_VERSION and data["kind"] == "run" and "summary" in data
    assert "default (cold)" in err  # the report itself went to stderr


def test_report_fail_on_gates_a_saved_result(main):
    errors, clean = str(DATA / "run_request_errors.json"), str(DATA / "run_sincos.json")
    assert main("report", errors)[0] == 0  # without --fail-on a report is only a report
    code, out, _ = main("report", errors, "--fail-on", "crash")
    assert code == 1 and "exit 1: --fail-on crash: " in out and "request(s) raised" in out, out  # why, said
    code, out, _ = main("report", str(DATA / "run_recompile_limit.json"), "--fail-on", "fallback")
    assert code == 1 and "exit 1: --fail-on fallback: static (cold): 3 request(s) ran eagerly" in " ".join(out.split()), out
    assert main("report", clean, "--fail-on", "crash,numerics,fallback")[0] == 0
    code, _, err = main("report", str(DATA / "probe_two_dims.json"), "--fail-on", "crash")
    assert code == 2 and "apply to run results, not a probe's" in err
    code, _, err = main("report", clean, "--fail-on", "bogus")
    assert code == 2 and "unknown --fail-on 'bogus'" in err


def _complete(words: str, cwd: Path) -> list[str]:
    env = dict(os.environ, _COMPILESCOPE_COMPLETE="bash_complete", COMP_WORDS=words,
               COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)))
    done = subprocess.run([sys.executable, "-m", "compilescope.cli"], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120)
    return done.stdout.split()


def test_completion_of_workload_names_file_names_and_script_paths(tmp_path):
    (tmp_path / "mine.py").write_text("from compilescope import Workload\n\ndef encoder():\n    pass\n\nw = 1\n")
    assert "plain,sincos" in _complete("compilescope run si", tmp_path)
    assert "file,mi" in _complete("compilescope forecast mi", tmp_path)  # the shell completes the path
    assert set(_complete("compilescope warmup mine.py:", tmp_path)) >= {"plain,mine.py:encoder", "plain,mine.py:w"}
    assert "file,mi" in _complete("compilescope probe mi", tmp_path)


def test_probe_says_when_its_own_options_went_to_the_script(main, tmp_path):
    (tmp_path / "args.py").write_text("import sys\nopen('argv.txt', 'w').write(repr(sys.argv[1:]))\n")
    code, _, err = main("probe", "args.py", "--json", "x.json")
    assert code == 0 and (tmp_path / "argv.txt").read_text() == "['--json', 'x.json']"  # as under python
    assert not (tmp_path / "x.json").exists()
    text = " ".join(err.split())
    assert "note: --json after the script went to the script, as under `python` — probe options go before it" in text
    assert "no probe JSON was written" in text
    code, _, err = main("probe", "--json", "p.json", "args.py", "--json", "x.json")
    assert code == 0 and "went to the script" not in err  # probe wrote its JSON: nothing to say


def test_a_probe_that_compiled_nothing_states_no_cache_or_compile_time(main, tmp_path):
    (tmp_path / "plain.py").write_text("print('hi')\n")
    code, _, err = main("probe", "plain.py")
    head = " ".join(err.split())
    assert code == 0 and "nothing compiled, 0 graph break(s)" in head
    assert "compile cache" not in head and "0 ns" not in head


def test_overlapping_cause_counts_are_said_to_overlap():
    """Both dims of x changed at 0/1 against its one entry: that compile is both causes'."""
    import dataclasses

    result = load(DATA / "probe_two_dims.json")
    first = next(c for c in result.compiles if str(c.compile_id) == "0/1")
    (dim1,) = first.guard_failures
    dim0 = dataclasses.replace(dim1, reason="tensor 'x' size mismatch at index 0. expected 4, actual 8", dim=0,
                               expected=4, actual=8)
    result = dataclasses.replace(result, compiles=tuple(
        dataclasses.replace(c, guard_failures=(dim1, dim0)) if c is first else c for c in result.compiles))
    report = build_probe_report(result)
    (f,) = report.functions
    assert f.causes_overlap and sum(len(c.compile_ids) for c in f.causes) > f.recompiles
    from compilescope.render.probe import renderables
    from compilescope.render.console import to_text

    assert "counts overlap: one recompile can have several causes" in to_text(renderables(report), width=200)
    limit = build_probe_report(load(DATA / "probe_recompile_limit.json")).functions[0]
    assert not limit.causes_overlap  # its refusals are counted with its recompiles, not overlapping


def test_a_failed_compile_cause_is_a_whole_sentence():
    from compilescope.analysis.build import _fallback_cause
    from compilescope.model import CompileId, CompileRecord

    failed = CompileRecord(CompileId.parse("0/1"), "f", "f.py", 1, outcome="failed", call_index=1, phase="stream",
                           fail_type="BackendCompilerFailed")
    assert _fallback_cause(2, (failed,), 8) == ("compile 0/1 failed (BackendCompilerFailed); Dynamo runs the frame "
                                               "eagerly from then on")


def test_verdict_durations_read_as_the_tables_do():
    from compilescope.units import fmt_time

    scale = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
    seen = 0
    for name in ("run_sincos", "run_convnet_warm", "run_recompile_limit"):
        report = build_run_report(load(DATA / f"{name}.json"))
        for t in report.trials:
            text = verdict_text(t.verdict)
            for m in re.finditer(r"(?<![\d.])(-?\d+(?:\.\d+)?) (s|ms|µs|ns)\b", text):
                seen += 1  # each duration printed as the tables print it: 968 ms, never 967.67 ms or 2.0 s
                assert fmt_time(float(m[1]) * scale[m[2]]) == m[0], (m[0], text)
    assert seen > 10


def test_advise_shows_no_compile_time_for_eager():
    from compilescope.analysis.advise import judge
    from compilescope.render.console import advice_renderables, to_text

    report = build_run_report(load(DATA / "run_sincos.json"))
    advice = judge(report, [], "total", 10_000, [])
    (row,) = [line for line in to_text(advice_renderables(advice), width=300).splitlines()
              if line.strip("│ ").startswith("eager ")]
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[0] == "eager" and cells[3] == "—" and "0 ns" not in row  # no compile time for what compiled nothing
