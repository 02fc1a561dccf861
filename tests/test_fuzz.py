"""Hostile input never crashes: the stream parser, the results loader and the trace reader,
fuzzed with Hypothesis (bounded: a few hundred examples each). Each either parses or gives
its one typed error (exit 2 at the CLI), or — the trace reader — counts what it could not use."""

from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compilescope.errors import CompilescopeError, ResultsError, StreamError
from compilescope.model import ProbeResult, RunResult
from compilescope.probe.trace import TraceState, read_lines, read_trace
from compilescope.schema import dumps, loads
from compilescope.stream import parse_stream

from .test_schema import sample_result

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
STREAM_ALPHABET = st.sampled_from(list("0123456789,;=:.|@-_ nbatchseqproductrandomcount\n\x00é[]{}\"'"))


@FUZZ
@given(st.text(STREAM_ALPHABET, max_size=60))
def test_stream_specs_parse_or_name_the_bad_token(spec):
    try:
        shapes = parse_stream(spec, ("n",))
    except StreamError as exc:
        assert "\n" not in str(exc)
        return
    assert shapes and all(set(s) == {"n"} and s["n"] >= 0 for s in shapes)


@FUZZ
@given(st.binary(max_size=300))
def test_stream_files_of_random_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("s") / "s.jsonl"
    path.write_bytes(data)
    try:
        parse_stream(f"@{path}", ("n",))
    except StreamError:
        pass


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


VALID = json.loads(dumps(sample_result()))
ALL_PATHS = [p for p in _paths(VALID) if p and p[0] != "schema_version"]


@FUZZ
@given(st.sampled_from(ALL_PATHS), JSONISH)
def test_results_with_a_field_of_the_wrong_type(path, value):
    data = json.loads(json.dumps(VALID))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    try:
        got = loads(json.dumps(data))
    except ResultsError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(got, (RunResult, ProbeResult))


@FUZZ
@given(st.binary(max_size=400))
def test_results_from_random_bytes(data):
    try:
        loads(data)
    except ResultsError:
        pass


@FUZZ
@given(st.integers(min_value=0, max_value=len(dumps(sample_result()))))
def test_truncated_results(cut):
    try:
        loads(dumps(sample_result())[:cut])
    except ResultsError:
        pass


def test_deep_nesting_and_huge_numbers():
    for text in ("[" * 100_000 + "]" * 100_000, '{"schema_version": 2, "trials": ' + "[" * 5000 + "]" * 5000 + "}",
                 '{"schema_version": ' + "9" * 5000 + "}"):
        try:
            loads(text)
        except ResultsError:
            pass


PREFIX = "V1130 10:00:00.000000 1 torch/_dynamo/x.py:1] "
KINDS = ["compilation_metrics", "bwd_compilation_metrics", "str", "dynamo_start", "artifact", "whatever"]


@st.composite
def envelopes(draw):
    kind = draw(st.sampled_from(KINDS))
    env = {kind: draw(JSONISH)}
    if draw(st.booleans()):
        env["frame_id"] = draw(JSONISH)
        env["frame_compile_id"] = draw(JSONISH)
    if kind == "compilation_metrics" and draw(st.booleans()):
        env[kind] = {f: draw(JSONISH) for f in draw(st.lists(st.sampled_from(
            ["compile_id", "co_name", "co_filename", "co_firstlineno", "duration_us", "fail_type", "fail_reason",
             "is_forward", "start_time_us", "dynamo_config", "inductor_fx_local_cache_hit_count"]), max_size=6))}
    if kind == "artifact" and draw(st.booleans()):
        env[kind] = {"name": draw(st.sampled_from(["recompile_reasons", "dynamo_graph_break_reason"])),
                     "encoding": draw(JSONISH)}
        env["has_payload"] = draw(st.text(max_size=4))
    return PREFIX + json.dumps(env)


@FUZZ
@given(st.lists(envelopes() | st.text(max_size=40).map(lambda t: "\t" + t) | st.text(max_size=40), max_size=12))
def test_trace_lines_with_wrong_types_are_counted_never_raised(lines):
    state = TraceState()
    read_lines(lines, state)  # must not raise
    assert all(isinstance(v, int) for v in state.counters.values())


@FUZZ
@given(st.binary(max_size=500))
def test_trace_directory_of_random_bytes(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("t")
    (root / "dedicated_log_torch_trace_0.log").write_bytes(data)
    try:
        read_trace(root)
    except CompilescopeError:
        pass


def test_cli_binary_inputs_are_one_line_exit_2(tmp_path):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)) * 4)
    for args in (["run", "sincos", "--stream", f"@{blob}"], ["report", str(blob)]):
        proc = subprocess.run([sys.executable, "-m", "compilescope.cli", *args], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
