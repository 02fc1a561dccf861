"""watch(record_shapes=): what is written per call, the bounds and their counts, and that
the file is a stream run/forecast read back."""

from __future__ import annotations

import json

import pytest
import torch

import compilescope
from compilescope.errors import OptionError
from compilescope.shapes_record import read_recorded
from compilescope.stream import parse_stream


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def scaled(x, n, scale=1.0):
    return x.sin() * n * scale


def test_one_function_writes_shapes_dtypes_scalars_and_counts(tmp_path):
    cf = torch.compile(scaled, backend="eager")
    path = tmp_path / "shapes.jsonl"
    with compilescope.watch(record_shapes=path) as w:
        for k in (2, 3, 2):
            cf(torch.randn(k, 5, dtype=torch.float64), 3, scale=0.5)
    lines = _lines(path)
    assert lines[:3] == [{"shape": {"x.0": k, "x.1": 5}, "dtypes": {"x": "float64"},
                          "scalars": {"n": 3, "scale": 0.5}} for k in (2, 3, 2)]
    assert lines[3]["compilescope"] | {} == {"record": "shapes", "function": "scaled", "calls": 3, "written": 3,
                                             "dropped_by_size": 0, "sample": 1.0, "sampled_out": 0}
    assert w.recorded is not None and [(f.function, f.path, f.written) for f in w.recorded.files] == [
        ("scaled", str(path), 3)]
    assert w.compiles == 2  # the watch still counts as before
    assert parse_stream(f"@{path}", ("n",)) == ({"n": 2}, {"n": 3}, {"n": 2})  # x.1 never varies


def test_several_functions_get_one_file_each_named_by_function(tmp_path):
    cf = torch.compile(scaled, backend="eager")
    lin = torch.nn.Linear(4, 3)
    module = torch.compile(lin, backend="eager")
    path = tmp_path / "shapes.jsonl"
    with compilescope.watch(record_shapes=path) as w:
        for k in (1, 2, 3):
            cf(torch.randn(k), 2)
            module(input=torch.randn(k, 4))  # a keyword argument, named as the parameter
    assert not path.exists()
    by_fn = {f.function: f for f in w.recorded.files}
    assert set(by_fn) == {"scaled", "Linear.forward"}
    assert by_fn["scaled"].path == str(tmp_path / "shapes.scaled.jsonl")
    assert by_fn["Linear.forward"].path == str(tmp_path / "shapes.Linear.forward.jsonl")
    rows, meta = read_recorded(by_fn["Linear.forward"].path)
    assert [r["shape"] for r in rows] == [{"input.0": k, "input.1": 4} for k in (1, 2, 3)]
    assert meta["function"] == "Linear.forward" and meta["written"] == 3


def test_functions_filter_records_only_those(tmp_path):
    cf = torch.compile(scaled, backend="eager")
    other = torch.compile(lambda y: y.cos(), backend="eager")
    path = tmp_path / "shapes.jsonl"
    with compilescope.watch(functions=[cf], record_shapes=path) as w:
        cf(torch.randn(4), 1)
        other(torch.randn(5))
    assert [f.function for f in w.recorded.files] == ["scaled"]
    assert [r["shape"] for r in read_recorded(path)[0]] == [{"x.0": 4}]


def test_sampling_and_size_bound_count_what_they_drop(tmp_path):
    cf = torch.compile(scaled, backend="eager")
    sampled = tmp_path / "sampled.jsonl"
    with compilescope.watch(record_shapes=sampled, record_sample=0.1) as w:
        for i in range(100):
            cf(torch.randn(1 + i % 3), 1)
    meta = read_recorded(sampled)[1]
    assert w.recorded.sampled_out == 90 and meta["written"] == 10 and meta["sampled_out"] == 90
    bounded = tmp_path / "bounded.jsonl"
    one_line = len(json.dumps({"shape": {"x.0": 1}, "dtypes": {"x": "float32"}, "scalars": {"n": 1}})) + 1
    with compilescope.watch(record_shapes=bounded, record_max_bytes=5 * one_line) as w:
        for _ in range(40):
            cf(torch.randn(1), 1)
    rows, meta = read_recorded(bounded)
    assert len(rows) == 5 and meta["written"] == 5 and meta["dropped_by_size"] == 35 and meta["calls"] == 40
    assert w.recorded.files[0].dropped_by_size == 35


def test_recording_ends_with_the_watch(tmp_path):
    from torch._dynamo import eval_frame

    before = eval_frame._callback_from_stance
    cf = torch.compile(scaled, backend="eager")
    path = tmp_path / "shapes.jsonl"
    with compilescope.watch(record_shapes=path):
        cf(torch.randn(2), 1)
        assert eval_frame._callback_from_stance is not before
    cf(torch.randn(3), 1)
    assert eval_frame._callback_from_stance is before
    assert len(read_recorded(path)[0]) == 1


@pytest.mark.parametrize("kwargs, message", [
    ({"record_sample": 0}, "a rate in (0, 1]"),
    ({"record_sample": 1.5}, "a rate in (0, 1]"),
    ({"record_max_bytes": 0}, "a positive number of bytes"),
])
def test_bad_bounds_are_refused_at_once(tmp_path, kwargs, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)").replace("]", r"\]")):
        compilescope.watch(record_shapes=tmp_path / "s.jsonl", **kwargs)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(OptionError, match="is a directory"):
        compilescope.watch(record_shapes=tmp_path)


@pytest.mark.processes  # the forecast checks its backend in a process of its own
def test_a_recording_replays_as_the_same_forecast_and_run(tmp_path):
    """Record a served transformer's calls, then forecast the recording: the outcomes are
    those the watched calls had."""
    from compilescope.forecast import forecast
    from compilescope.workload import load_workload, seeded_inputs

    w = load_workload("transformer")
    model = torch.compile(w.build(), backend="eager")
    stream = ({"batch": 1, "seq": 16}, {"batch": 4, "seq": 16}, {"batch": 4, "seq": 32}, {"batch": 1, "seq": 16})
    path = tmp_path / "served.jsonl"
    with torch.no_grad(), compilescope.watch(record_shapes=path) as watched:
        for shape in stream:
            model(*seeded_inputs(w, shape))
    rows, _ = read_recorded(path)
    assert [r["shape"] for r in rows] == [{"x.0": s["batch"], "x.1": s["seq"], "x.2": 128} for s in stream]
    assert parse_stream(f"@{path}", w.dims) == stream  # x.2 never varies: the two that do map to batch, seq
    report = forecast("transformer", f"@{path}", "default", backend="eager")
    s = report.strategy("default")
    assert s.compiles == watched.compiles == 3  # batch, then seq, each made dynamic by a recompile
    assert [r.outcome for r in s.requests] == ["compile", "compile", "compile", "hit"]
    assert [r.compile_ids for r in s.requests[:3]] == [(str(c.compile_id),) for c in watched.records]


@pytest.mark.processes
def test_probe_records_a_scripts_compiled_calls(cli, tmp_path):
    script = tmp_path / "serve.py"
    script.write_text(
        "import torch\n"
        "def scale(x, n):\n"
        "    return x * n\n"
        "f = torch.compile(scale, backend='eager')\n"
        "for k in (2, 3, 2, 4):\n"
        "    f(torch.randn(k, 3), 2)\n"
    )
    proc = cli("probe", "--record-shapes", "rec.jsonl", str(script))
    assert proc.returncode == 0, proc.stderr
    assert "recorded shapes: rec.jsonl" in proc.stderr
    rows, meta = read_recorded(tmp_path / "rec.jsonl")
    assert [r["shape"] for r in rows] == [{"x.0": k, "x.1": 3} for k in (2, 3, 2, 4)]
    assert rows[0]["scalars"] == {"n": 2} and meta["function"] == "scale" and meta["written"] == 4
    assert parse_stream(f"@{tmp_path / 'rec.jsonl'}", ("n",)) == tuple({"n": k} for k in (2, 3, 2, 4))


@pytest.mark.processes
def test_probe_record_shapes_refuses_a_bad_path_before_running(cli, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("open('ran', 'w').write('yes')\n")
    proc = cli("probe", "--record-shapes", "missing-dir/rec.jsonl", str(script))
    assert proc.returncode == 2 and "no directory 'missing-dir'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ran").exists()


def test_record_shapes_is_one_scope_not_a_decorator(tmp_path):
    with pytest.raises(ValueError, match="records one scope"):
        compilescope.watch(record_shapes=tmp_path / "s.jsonl")(scaled)


def test_a_device_is_refused_before_any_call():
    with pytest.raises(OptionError, match="character device"):
        compilescope.watch(record_shapes="/dev/null")
