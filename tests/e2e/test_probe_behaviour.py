"""probe as a user meets it: exit status, errors, the user's own logging, --strict, the stream."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from compilescope.schema import load

from ..conftest import run_cli

SCENARIOS = Path(__file__).resolve().parents[1] / "probe_scenarios"


def probe(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_cli("probe", *args, timeout=300, env=dict(os.environ, **(env or {})), cwd=cwd or Path.cwd())


def test_script_runs_as_main_with_its_argv_and_exit_status(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(
        "import sys, torch\n"
        "f = torch.compile(lambda x: x + 1, backend='eager')\n"
        "if __name__ == '__main__':\n"
        "    for n in map(int, sys.argv[1:]):\n"
        "        f(torch.ones(n))\n"
        "    print('argv', sys.argv[1:])\n"
        "    sys.exit(3)\n"
    )
    out = tmp_path / "p.json"
    proc = probe("--json", str(out), str(script), "4", "8")
    assert proc.returncode == 3
    assert "argv ['4', '8']" in proc.stdout  # the program's output is its own, on stdout
    assert "compilescope probe" in proc.stderr  # the report goes to stderr
    data = json.loads(out.read_text())
    assert [c["compile_id"] for c in data["compiles"]] == ["0/0", "0/1"]
    assert data["exit_code"] == 3


def test_an_exit_code_past_255_is_recorded_as_the_status_the_process_has(tmp_path):
    script = tmp_path / "wrap.py"
    script.write_text("import sys\nsys.exit(257)\n")
    out = tmp_path / "w.json"
    plain = subprocess.run([sys.executable, str(script)], timeout=60)
    proc = probe("--json", str(out), str(script))
    assert proc.returncode == plain.returncode == 1
    assert json.loads(out.read_text())["exit_code"] == 1
    # the probed process's own journal ends with that status too, not sys.exit's argument
    journal = tmp_path / "j.jsonl"
    child = subprocess.run([sys.executable, "-c", "import sys; from compilescope.probe.child import run_child; "
                            f"run_child({str(script)!r}, [], {str(journal)!r})"], timeout=300)
    assert child.returncode == 1
    ends = [json.loads(line)["end"] for line in journal.read_text().splitlines() if "end" in json.loads(line)]
    assert ends == [{"exit_code": 1, "error": None}]


def test_a_raising_script_still_gets_its_report(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text(
        "import torch\nf = torch.compile(lambda x: x * 2, backend='eager')\nf(torch.ones(2))\n"
        "f(torch.ones(3))\nraise RuntimeError('after two compiles')\n"
    )
    out = tmp_path / "b.json"
    proc = probe("--json", str(out), str(script))
    assert proc.returncode == 1
    assert "Traceback" in proc.stderr and "RuntimeError: after two compiles" in proc.stderr
    assert "compilescope.cli" not in proc.stderr.split("Traceback", 1)[1].split("\n")[1]  # starts at the script
    data = json.loads(out.read_text())
    assert len(data["compiles"]) == 2 and data["error"] == "RuntimeError: after two compiles"


def test_bad_inputs_exit_2_with_one_line(tmp_path, main):
    for args, message in (
        (["missing_script.py"], "does not exist"),
        ([str(tmp_path)], "is a directory, not a script"),
        (["--trace", str(tmp_path / "nope")], "does not exist"),
        (["--trace", str(tmp_path)], "no TORCH_TRACE .log file"),
        ([], "give a SCRIPT"),
    ):
        code, _, err = main("probe", *args)  # refused before anything runs: the CLI in this process
        assert code == 2, (args, err)
        assert message in err and len(err.strip().splitlines()) == 1


def test_users_torch_logs_survive(tmp_path):
    proc = probe(str(SCENARIOS / "shape_static.py"), env={"TORCH_LOGS": "recompiles"})
    assert proc.returncode == 0
    assert proc.stderr.count("Recompiling function f") == 2  # the user's own log, untouched


def test_users_set_logs_survive(tmp_path):
    script = tmp_path / "logs.py"
    script.write_text(
        "import torch, logging\ntorch._logging.set_logs(graph_breaks=True)\n"
        "@torch.compile(backend='eager')\ndef f(x):\n    print('hi')\n    return x\nf(torch.ones(2))\n"
    )
    proc = probe(str(script))
    assert "Graph break in user code" in proc.stderr


def test_capture_is_removed_at_exit():
    from torch._dynamo import guards
    from torch._dynamo.utils import guard_failures

    from compilescope.probe.capture import probe_script

    before = (torch.compile, guard_failures.default_factory, guards.is_recompiles_verbose_enabled, torch._dynamo.reset)
    result = probe_script(str(SCENARIOS / "shape_default.py"), [])
    assert [str(c.compile_id) for c in result.compiles] == ["0/0", "0/1"]
    after = (torch.compile, guard_failures.default_factory, guards.is_recompiles_verbose_enabled, torch._dynamo.reset)
    assert after == before


def test_causes_are_grouped_with_next_steps():
    from compilescope.analysis.build import build_probe_report
    from compilescope.probe.capture import probe_script

    result = probe_script(str(SCENARIOS / "two_functions.py"), [])
    reports = {r.name: r for r in build_probe_report(result).functions}
    (encode_cause,) = reports["encode"].causes
    assert (encode_cause.source, encode_cause.kind, encode_cause.dim) == ("L['x']", "size", 0)
    assert encode_cause.description == "L['x'] dim 0 varied over 4, 8 → 1 compile(s)"
    assert encode_cause.shape_reducible and "mark_dynamic(x, 0);" in encode_cause.next_step
    (decode_cause,) = reports["decode"].causes
    assert decode_cause.kind == "value" and not decode_cause.shape_reducible


def test_strict_trace_names_the_counter(tmp_path, main):
    trace = tmp_path / "trace"
    subprocess.run([sys.executable, str(SCENARIOS / "shape_default.py")], env=dict(os.environ, TORCH_TRACE=str(trace)),
                   check=True, capture_output=True, timeout=300)
    (log,) = trace.glob("*.log")
    with log.open("a") as fh:
        fh.write('V1129 10:00:00.000000 1 torch/x.py:1] {"brand_new_event": {}, "frame_id": 0, "frame_compile_id": 0}\n')
    # reading a trace runs no program: the CLI in this process
    code, _, err = main("probe", "--trace", str(trace))
    assert code == 0 and "unknown_event:brand_new_event=1" in err
    code, _, err = main("probe", "--trace", str(trace), "--strict")
    assert code == 2 and "unknown_event:brand_new_event=1" in err


def test_stream_out_feeds_run(tmp_path, main):
    stream = tmp_path / "shapes.jsonl"
    proc = probe("--stream-out", str(stream), str(SCENARIOS / "shape_default.py"))
    assert proc.returncode == 0
    rows = [json.loads(line) for line in stream.read_text().splitlines()]
    assert rows == [{"x.0": n} for n in (16, 16, 32, 32, 64, 16)]
    out = tmp_path / "r.json"
    code, _, err = main("run", "sincos", "--stream", f"@{stream}", "--strategies", "default", "--backend", "eager",
                        "--samples", "3", "--budget", "0.01", "--json", str(out))  # its trials are processes
    assert code == 0, err
    default = load(out).trials[1]
    assert [c.shape["n"] for c in default.calls] == [16, 16, 32, 32, 64, 16]
    assert sum(1 for e in default.compiles if e.is_compile) == 2


def test_non_shape_and_range_causes_get_their_own_advice():
    from compilescope.analysis.build import build_probe_report
    from compilescope.probe.capture import probe_script

    def function_reports(result):
        return build_probe_report(result).functions

    (report,) = function_reports(probe_script(str(SCENARIOS / "train_eval.py"), []))
    (cause,) = report.causes
    assert cause.kind == "module_attribute" and cause.source.endswith(".training")
    assert not cause.shape_reducible and "train/eval" in cause.next_step

    (report,) = function_reports(probe_script(str(SCENARIOS / "mark_dynamic_range.py"), []))
    (cause,) = report.causes
    assert cause.shape_reducible and "outside the range given to mark_dynamic" in cause.next_step
    assert "4 <= x.size()[0] <= 64" in cause.description


MODULES = """
import functools
import torch


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    @logged
    def forward(self, hidden, scale=1.0):
        return self.proj(hidden) * scale


lin = torch.compile(torch.nn.Linear(4, 4), backend="eager", dynamic=False)
enc = torch.compile(Encoder(), backend="eager", dynamic=False)
for b in (2, 3):
    lin(torch.randn(b, 4))
    enc(hidden=torch.randn(b, 4))
"""


def test_compiled_modules_are_named_by_class_and_forward(tmp_path):
    from compilescope.analysis.build import build_probe_report
    from compilescope.probe.capture import probe_script

    script = tmp_path / "modules.py"
    script.write_text(MODULES)
    report = build_probe_report(probe_script(str(script), []))
    names = {f.name: f for f in report.functions}
    assert set(names) == {"Linear.forward", "Encoder.forward"}  # not `inner`, not `wrapper`
    assert names["Encoder.forward"].location == f"{script}:18"  # the user's forward (its decorator line, as Python counts)
    assert "inner" in names["Linear.forward"].frame  # PyTorch's frame name kept alongside
    (cause,) = names["Encoder.forward"].causes
    assert cause.source == "L['hidden']" and "mark_dynamic(hidden, 0" in cause.next_step  # pasteable
    (cause,) = names["Linear.forward"].causes
    assert cause.source == "L['input']"


GIVES_UP = """
import torch
lstm = torch.nn.LSTM(4, 4, batch_first=True)
def f(x):
    return lstm(x * 2)[0].sum()
compiled = torch.compile(f, backend="eager")
for n in (3, 5):
    compiled(torch.randn(2, n, 4))
"""


def test_a_frame_dynamo_gives_up_after_a_break_has_one_break_in_a_trace_and_in_process(tmp_path, main):
    """Dynamo meets the LSTM, restarts, cannot resume after the break and runs the whole of ``f``
    eagerly: its trace logs the break twice (the second "Failed to handle graph break
    gracefully…", with another traceback), the in-process capture once. One break both ways,
    at the user's line; the compile is the one that failed."""
    from compilescope.analysis.build import build_probe_report
    from compilescope.probe.capture import probe_script
    from compilescope.probe.trace import read_trace

    script = tmp_path / "gives_up.py"
    script.write_text(GIVES_UP)
    trace = tmp_path / "trace"
    subprocess.run([sys.executable, str(script)], env=dict(os.environ, TORCH_TRACE=str(trace)), check=True,
                   capture_output=True, timeout=300)
    logged = sum(log.read_text().count('"name": "dynamo_graph_break_reason"') for log in trace.glob("*.log"))
    assert logged == 2  # what the reader has to fold
    for result in (read_trace(trace), probe_script(str(script), [])):
        assert [(b.filename, b.line) for b in result.graph_breaks] == [(str(script), 5)], result.graph_breaks
        assert [(str(c.compile_id), c.outcome) for c in result.compiles] == [("0/0", "failed")]
        assert build_probe_report(result).graph_break_count == 1  # the header's "1 graph break(s)"


NESTED = """
import torch
class M(torch.nn.Module):
    def forward(self, x):
        x = x + 1
        torch._dynamo.graph_break()
        return x * 3
module = torch.compile(M(), backend="eager")
@torch.compile(backend="eager")
def inner(x):
    x = x - 1
    torch._dynamo.graph_break()
    return x / 2
@torch.compile(backend="eager")
def outer(x):
    return module(inner(x.sin())).cos()
for n in (4, 4, 6):
    outer(torch.randn(n))
"""


def test_compiled_functions_called_from_a_compiled_function_are_probed_as_they_run_unprobed(tmp_path):
    """The probe's wrappers around a compiled function and a compiled module are called from
    inside ``outer``: traced there, and run as frames of their own in its region after a break.
    Dynamo must meet the user's code as it does unprobed — the same compiles and breaks as the
    plain run's TORCH_TRACE, none of them in compilescope's own files."""
    from compilescope.probe.capture import probe_script
    from compilescope.probe.trace import read_trace

    script = tmp_path / "nested.py"
    script.write_text(NESTED)
    trace = tmp_path / "trace"
    subprocess.run([sys.executable, str(script)], env=dict(os.environ, TORCH_TRACE=str(trace)), check=True,
                   capture_output=True, timeout=300)
    plain, probed = read_trace(trace), probe_script(str(script), [])

    def seen(result):
        return (sorted((str(c.compile_id), c.function, c.line, c.outcome) for c in result.compiles),
                sorted((b.filename, b.line) for b in result.graph_breaks))

    assert seen(probed) == seen(plain)
    assert {c.filename for c in probed.compiles} == {str(script)}
    assert probed.graph_breaks and not probed.lost_capabilities
    assert [c.function for c in probed.calls] == ["outer", "inner", "M.forward"] * 3  # each call, once


def test_a_frame_refused_before_any_compile_is_said_to_be_unnamed_not_a_question_mark(tmp_path):
    """A recompile limit of 0 refuses the frame's first compile: PyTorch's metrics then name no
    function and no file; the report says so in words, the refusal counted."""
    from compilescope.analysis.build import build_probe_report
    from compilescope.probe.capture import probe_script

    script = tmp_path / "limit0.py"
    script.write_text("import torch\ntorch._dynamo.config.recompile_limit = 0\n"
                      "f = torch.compile(lambda x: x.sin() + 1, backend='eager')\nfor n in (4, 8):\n    f(torch.ones(n))\n")
    limit = torch._dynamo.config.recompile_limit
    try:  # the script runs in this process and sets the limit: put back for the tests that follow
        (function,) = build_probe_report(probe_script(str(script), [])).functions
    finally:
        torch._dynamo.config.recompile_limit = limit
    assert (function.name, function.location) == ("(a frame PyTorch did not name)", "(no location recorded)")
    assert (function.compiles, function.refused) == (0, 1)
