"""Hostile input never crashes: the stream parser, the results loader and the trace reader,
fuzzed with Hypothesis (bounded: a few hundred examples each). Each either parses or gives
its one typed error (exit 2 at the CLI), or — the trace reader — counts what it could not use."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compilescope.errors import CompilescopeError, ResultsError, StreamError
from compilescope.model import ProbeResult, RunResult
from compilescope.probe.trace import TraceState, read_lines, read_trace
from compilescope.schema import dumps, loads
from compilescope.stream import parse_stream

from ..conftest import cli_here
from ..unit.test_schema import sample_result

# database=None: no example database in the working directory (.hypothesis/), so a run neither
# reads what an earlier run left there nor leaves anything behind
FUZZ = settings(max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
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
        proc = cli_here(*args, cwd=tmp_path)  # in this process: an exception that escaped would fail the test
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr


# ----------------------------------------------------------------- command lines from the real option set

import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402
from unittest import mock  # noqa: E402

import click  # noqa: E402

from compilescope import cli as cli_module  # noqa: E402
from compilescope.execute.executor import done_future  # noqa: E402
from compilescope.execute.local import LocalExecutor  # noqa: E402
from compilescope.execute.task import TrialOutcome  # noqa: E402
from compilescope.model import TrialResult  # noqa: E402

WORKLOADS_FILE = Path(__file__).resolve().parents[1] / "workloads_for_tests.py"
# probe and advise --script run a script, demo the inductor matrix, sweep --executor ray a
# cluster: their own tests cover them; here every trial fails at once, so a command line that
# validates still runs the whole pipeline (plan, journal, results, report) in milliseconds
FUZZED = ("run", "advise", "report", "compare", "sweep")
NEVER = {"script": (), "executor": ("local", "nosuch", "")}
OUTPUTS = {"json_path", "csv_path", "html_path", "perfetto_path", "store_path", "stream_out", "outs", "plan_out",
           "record_shapes"}
def _closed_port() -> int:
    """A port of ours on 127.0.0.1 that nothing listens on: connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PATHS = ["o.json", "sub/o.out", "o.csv", ".", "sub", "r.json", "in.txt/o.json", "o[red].html", "-"]
VALUES: dict[str, list[str]] = {
    "workload": ["sincos", "mlp", f"{WORKLOADS_FILE}:fault_exit", "nosuch", "missing.py:w", f"{WORKLOADS_FILE}:nothing"],
    "stream": ["4,8", "batch=2;batch=4", "n=4;n=8", "99999999999999999999", "n=-1", "@in.txt", "@missing.jsonl",
               "", "product:n=4,8", "4,,8", "[bold]"],
    "strategies": ["eager", "eager,default", "default,static", "dynamic-sources", "mark-dynamic", "nosuch", ""],
    "cache": ["cold", "warm", "mega", "both", "all", "hot", ""],
    "backend": ["eager", "aot_eager", "no_such_backend", ""],
    "mode": ["max-autotune-no-cudagraphs", "nosuch"],
    "marks": ["x:0", "n:0:1:64", "x", "x:a", "x:0:9:1", ":0"],
    "dynamic_sources": ["L['x']", "L['x']:0", "L['x']:abc", "[", ""],
    "block": ["Linear", "Nope"],
    "buckets": ["pow2", "16,32", "32,16", "0", "x"],
    "fail_on": ["crash", "numerics,fallback", "nosuch", ""],
    "lifetime": ["100", "8h", "1e32h", "1" + "0" * 40 + "h", "9" * 40, "-1", "soon", "0"],
    "device": ["cpu", "cuda", "cuda:9", "tpu", "nosuch"],
    "where": ["workload=sincos", "nosuch=1", "bad"],
    "fail_on_regression": ["5%", "x", "-1%"],
    "pairs": ["default=static", "eager=eager", "default", "=", "default (cold)=nosuch"],
    "ray_address": [f"127.0.0.1:{_closed_port()}", "auto"],
    "result": ["r.json", "missing.json", "in.txt", "."],
    "a": ["r.json", "missing.json", "in.txt", "workload=sincos"],
    "b": ["r.json", "missing.json", "workload=sincos"],
    "sweep_file": ["s.toml", "bad.toml", "missing.toml", "in.txt"],
    "resume_path": ["r.json", "missing.json", "in.txt"],
}
SWEEP_FILE = 'workloads = ["sincos"]\nstrategies = ["eager", "default"]\n[settings]\nbackend = ["eager"]\n'


def _numbers(param: click.Parameter) -> list[str]:
    kind = param.type
    lo = getattr(kind, "min", None)
    hi = getattr(kind, "max", None)
    values = ["1", "0", "-1", "1e400", "nan", "x", "99999999999999999999"]
    if isinstance(kind, click.FloatRange):
        values += ["0.5", "1e-9"]
    for bound in (lo, hi):
        if bound is not None:
            values += [str(bound), str(bound + 1), str(bound - 1)]
    return values


def _values(param: click.Parameter) -> st.SearchStrategy[str]:
    name = param.name or ""
    if name in NEVER:
        return st.sampled_from(NEVER[name]) if NEVER[name] else st.nothing()
    if name in VALUES:
        return st.sampled_from(VALUES[name])
    if isinstance(param.type, click.Choice):
        return st.sampled_from([*param.type.choices, "nosuch"])
    if isinstance(param.type, (click.IntRange, click.FloatRange)) or param.type in (click.INT, click.FLOAT):
        return st.sampled_from(_numbers(param))
    if isinstance(param.type, click.Path):
        return st.sampled_from(PATHS)
    return st.text(st.sampled_from(list("ab1:,=[]/ -")), max_size=6)  # an option this table does not know yet


@st.composite
def command_lines(draw):  # type: ignore[no-untyped-def]
    name = draw(st.sampled_from(("run", *FUZZED)))  # run twice as often: it has most options
    command = cli_module.cli.commands[name]
    argv = [name]
    for param in command.params:
        if isinstance(param, click.Argument) and param.nargs == 1:
            if draw(st.sampled_from([True] * 9 + [False])):  # mostly given
                argv.append(draw(_values(param)))
    options = [p for p in command.params if isinstance(p, click.Option) and p.name not in NEVER or
               (isinstance(p, click.Option) and NEVER.get(p.name or ""))]
    for param in draw(st.lists(st.sampled_from(options), unique_by=lambda p: p.name, max_size=5)):
        flag = draw(st.sampled_from(param.opts))
        if param.is_flag:
            argv.append(flag)
        else:
            argv += [flag, draw(_values(param))]
    junk = draw(st.sampled_from([None] * 16 + ["--nosuch", "--", "-x", "--help"]))  # now and then
    if junk is not None:
        argv.insert(draw(st.integers(1, len(argv))), junk)
    return argv


def _fails_at_once(self, task, timeout_s, on_call=None):  # type: ignore[no-untyped-def]
    return done_future(TrialOutcome(TrialResult(task.spec, "failed",
                                                error="trial process exited with status 1 at request 0")))


def _files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(argv=command_lines())
def test_command_lines_exit_0_1_or_2_and_write_only_their_outputs(tmp_path_factory, capsys, argv):
    here = tmp_path_factory.mktemp("cli")
    (here / "in.txt").write_text("not a results file\n")
    (here / "s.toml").write_text(SWEEP_FILE)
    (here / "bad.toml").write_text("workloads = 3\n")
    (here / "r.json").write_text(dumps(sample_result()))
    scratch = here / "tmp"
    scratch.mkdir()
    before = _files(here)
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    cwd = os.getcwd()
    os.chdir(here)
    try:
        with mock.patch.object(LocalExecutor, "submit", _fails_at_once), mock.patch.object(tempfile, "tempdir",
                                                                                         str(scratch)):
            rc = cli_module.main(list(argv))
    finally:
        os.chdir(cwd)
        for s, handler in saved.items():
            signal.signal(s, handler)
    out, err = capsys.readouterr()
    assert rc in (0, 1, 2), (argv, rc, err)
    assert "Traceback" not in out + err, (argv, err)
    if rc == 2 and err.strip():
        assert len(err.strip().splitlines()) == 1, (argv, err)
    given = {Path(argv[i + 1]) for i, a in enumerate(argv[:-1])
             if any(a in p.opts for p in cli_module.cli.commands[argv[0]].params if p.name in OUTPUTS)}
    allowed = given | {Path(f"{p}.journal") for p in given}
    written = {p for p in _files(here) - before
               if p not in allowed and p.parts[0] != "compilescope-results"}  # the default results folder
    assert not written, (argv, written)
    assert list(scratch.iterdir()) == [], (argv, list(scratch.iterdir()))  # temporary files removed
