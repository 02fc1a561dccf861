"""Nothing of the user's is overwritten, lost or changed: an output on a file the command
reads is refused, and the shape recorder never raises into the program nor touches a file it
did not create (a full disk, a folder removed mid-scope, two recordings of one file, a derived
file name that is taken)."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import compilescope
from compilescope.shapes_record import read_recorded

RECORDING = "".join(json.dumps({"shape": {"x.0": n}}) + "\n" for n in (16, 32, 16))
FAST = ("--samples", "3", "--budget", "0.01", "--warmup", "1")


def one_line_refusal(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("compilescope: error: "), err
    for needle in needles:
        assert needle in err, err


# --------------------------------------------------------------------------------------------
# An output on a file the command reads
# --------------------------------------------------------------------------------------------

READS_AND_WRITES = [
    (("forecast", "sincos", "--stream", "@s.jsonl", "--json", "s.jsonl"), "--stream @s.jsonl"),
    (("forecast", "sincos", "--stream", "@s.json", "--out", "s.json"), "--stream @s.json"),
    (("run", "sincos", "--strategies", "eager", "--backend", "eager", *FAST, "--stream", "@s.jsonl",
      "--json", "s.jsonl"), "--stream @s.jsonl"),
    (("run", "sincos", "--strategies", "eager", "--backend", "eager", *FAST, "--stream", "@s.jsonl",
      "--csv", "./s.jsonl"), "--stream @s.jsonl"),
    (("advise", "sincos", "--backend", "eager", *FAST, "--stream", "@s.jsonl", "--json", "s.jsonl"),
     "--stream @s.jsonl"),
    (("warmup", "sincos", "--backend", "eager", "--stream", "@s.jsonl", "--plan-out", "s.jsonl"),
     "--stream @s.jsonl"),
    (("warmup", "sincos", "--backend", "eager", "--stream", "@s.jsonl", "--json", "s.jsonl"), "--stream @s.jsonl"),
    (("warmup", "sincos", "--backend", "eager", "--stream", "16,32", "--verify", "@s.jsonl", "--json", "s.jsonl"),
     "--verify @s.jsonl"),
    (("warmup", "sincos", "--backend", "eager", "--stream", "16,32", "--verify", "@s.jsonl",
      "--plan-out", "s.jsonl"), "--verify @s.jsonl"),
]


@pytest.mark.parametrize(("args", "named"), READS_AND_WRITES, ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_an_output_on_the_stream_file_read_is_refused_and_the_recording_kept(main, tmp_path, args, named):
    read = tmp_path / named.split("@")[1]
    read.write_text(RECORDING)
    code, _, err = main(*args)
    one_line_refusal(code, err, named, "name the same file")
    assert read.read_text() == RECORDING
    assert not list(tmp_path.rglob("*.journal"))  # refused before any trial


@pytest.mark.parametrize("other", ["--json", "--stream-out"])
def test_probe_record_shapes_on_another_output_of_probe_is_refused_before_the_script_runs(main, tmp_path, other):
    script = tmp_path / "script.py"
    script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    (tmp_path / "x.jsonl").write_text(RECORDING)
    code, _, err = main("probe", other, "x.jsonl", "--record-shapes", "x.jsonl", str(script))
    one_line_refusal(code, err, "--record-shapes", "name the same file")
    assert not (tmp_path / "ran").exists()
    assert (tmp_path / "x.jsonl").read_text() == RECORDING


# --------------------------------------------------------------------------------------------
# The shape recorder: never raises into the program, never touches what it did not create
# --------------------------------------------------------------------------------------------


def twice(x):
    return x * 2


def plus(x):
    return x + 1


def test_a_folder_removed_mid_scope_stops_the_recording_and_the_program_runs_on(tmp_path):
    cf = torch.compile(twice, backend="eager")
    folder = tmp_path / "rec"
    folder.mkdir()
    with compilescope.watch(record_shapes=folder / "s.jsonl") as w:
        cf(torch.randn(3))
        shutil.rmtree(folder)
        for k in (3, 4, 5):
            cf(torch.randn(k))  # the calls go on
    (recorded,) = w.recorded.files
    assert "was removed while recording" in recorded.stopped
    assert recorded.calls == 4
    assert not folder.exists()  # nothing recreated


def test_a_folder_removed_before_a_second_function_is_seen_stops_that_file_only(tmp_path):
    f, g = torch.compile(twice, backend="eager"), torch.compile(plus, backend="eager")
    folder = tmp_path / "rec"
    folder.mkdir()
    with compilescope.watch(record_shapes=folder / "s.jsonl") as w:
        for _ in range(600):  # past one batch: the first file is written while its folder is there
            f(torch.randn(2))
        shutil.rmtree(folder)
        g(torch.randn(2))
    stopped = {r.function: r.stopped for r in w.recorded.files}
    assert "No such file or directory" in stopped["plus"], stopped
    assert "removed while recording" in stopped["twice"], stopped
    assert not folder.exists()


def test_two_recordings_of_one_file_lose_nothing_silently(tmp_path):
    cf = torch.compile(twice, backend="eager")
    path = tmp_path / "s.jsonl"
    with compilescope.watch(record_shapes=path) as outer:
        cf(torch.randn(2))
        with compilescope.watch(record_shapes=path) as inner:
            cf(torch.randn(3))
            cf(torch.randn(4))
        cf(torch.randn(5))
    (inner_file,) = inner.recorded.files
    assert inner_file.written == 0 and "another recording is writing" in inner_file.stopped
    assert inner_file.dropped_stopped == 2
    (outer_file,) = outer.recorded.files
    assert outer_file.stopped == "" and outer_file.written == 4
    rows, meta = read_recorded(path)
    assert [r["shape"]["x.0"] for r in rows] == [2, 3, 4, 5] and meta["written"] == 4


def test_a_derived_file_name_that_is_a_users_file_is_left_as_it_is(tmp_path):
    f, g = torch.compile(twice, backend="eager"), torch.compile(plus, backend="eager")
    mine = tmp_path / "s.plus.jsonl"
    mine.write_text("my notes\n")
    with compilescope.watch(record_shapes=tmp_path / "s.jsonl") as w:
        f(torch.randn(2))
        g(torch.randn(2))
    assert mine.read_text() == "my notes\n"
    by = {r.function: r for r in w.recorded.files}
    assert "exists and is not a shape recording" in by["plus"].stopped
    assert by["twice"].path == str(tmp_path / "s.twice.jsonl") and by["twice"].stopped == ""


def test_the_first_files_new_name_taken_by_a_directory_keeps_it_at_the_given_path(tmp_path):
    f, g = torch.compile(twice, backend="eager"), torch.compile(plus, backend="eager")
    (tmp_path / "s.twice.jsonl").mkdir()
    (tmp_path / "s.twice.jsonl" / "keep").write_text("x")
    with compilescope.watch(record_shapes=tmp_path / "s.jsonl") as w:
        f(torch.randn(2))
        g(torch.randn(2))
    by = {r.function: r for r in w.recorded.files}
    assert by["twice"].path == str(tmp_path / "s.jsonl") and by["twice"].written == 1
    assert (tmp_path / "s.twice.jsonl" / "keep").read_text() == "x"
    assert read_recorded(tmp_path / "s.jsonl")[1]["function"] == "twice"


def test_an_earlier_recordings_derived_files_are_replaced_by_the_next(tmp_path):
    f, g = torch.compile(twice, backend="eager"), torch.compile(plus, backend="eager")
    for k in (2, 7):
        with compilescope.watch(record_shapes=tmp_path / "s.jsonl") as w:
            f(torch.randn(k))
            g(torch.randn(k))
        assert all(r.stopped == "" for r in w.recorded.files), w.recorded
    for name in ("s.twice.jsonl", "s.plus.jsonl"):
        assert [r["shape"]["x.0"] for r in read_recorded(tmp_path / name)[0]] == [7]


def test_a_recording_with_no_call_leaves_no_file_and_a_users_file_unchanged(tmp_path):
    with compilescope.watch(record_shapes=tmp_path / "new.jsonl"):
        pass
    assert not (tmp_path / "new.jsonl").exists()


FULL_DISK = textwrap.dedent("""
    import resource, signal, sys, torch, compilescope
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)        # a write past the limit fails as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
    cf = torch.compile(lambda x: x * 2, backend="eager")
    with compilescope.watch(record_shapes=sys.argv[1]) as w:
        for i in range(3000):
            cf(torch.randn(1 + i % 50))
    (f,) = w.recorded.files
    print("calls", f.calls, "written", f.written, "stopped", f.stopped)
""")


def test_a_full_disk_stops_the_recording_and_never_raises_into_the_program(tmp_path):
    script = tmp_path / "full.py"
    script.write_text(FULL_DISK)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "s.jsonl")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "calls 3000" in done.stdout and "stopped writing failed: File too large" in done.stdout, done.stdout
    assert os.path.getsize(tmp_path / "s.jsonl") <= 4096


PROBED = textwrap.dedent("""
    import torch
    cf = torch.compile(lambda x: x * 2, backend="eager")
    for i in range(3000):
        cf(torch.randn(1 + i % 50))
    print("done")
""")


def test_a_full_disk_under_probe_leaves_the_programs_exit_status_alone(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(PROBED)
    limit = 64 * 1024  # the probe's own journal fits, the recording (3000 lines) does not

    def cap() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    done = subprocess.run([sys.executable, "-m", "compilescope.cli", "probe", "--record-shapes", "s.jsonl",
                           str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path, preexec_fn=cap)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    assert "the shape recording of <lambda> stopped: writing failed: File too large" in done.stderr, done.stderr
    assert "the probe journal could not be written (File too large)" in done.stderr  # said, not raised
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------------------------
# The results store: damaged, dropped or locked is one line, before any trial
# --------------------------------------------------------------------------------------------

SWEEP = ('workloads = ["sincos"]\nstrategies = ["eager"]\n[settings]\nbackend = ["eager"]\n'
         '[streams]\nsincos = "16,32"\n[measure]\nsamples = 3\nbudget = 0.02\nwarmup = 1\n')


def filled_store(path: Path) -> Path:
    """A store of ours with enough rows to span many pages (no trial needed to damage one)."""
    from compilescope.store import Store

    Store(path).close()
    db = sqlite3.connect(str(path))
    columns = ("key", "sweep", "workload", "strategy", "label", "cache", "backend", "status", "torch", "host",
               "device", "stream", "spec", "result", "finished", "schema_version")
    with db:
        for i in range(300):
            db.execute(f"insert into trials ({', '.join(columns)}) values ({', '.join('?' * len(columns))})",
                       (f"k{i}", "s", "w", "eager", "eager", "cold", "eager", "ok", "2", "h", "cpu", "[]", "{}",
                        json.dumps({"pad": "x" * 2000}), "now", 2))
    db.close()
    return path


def damage_a_page(path: Path) -> None:
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 60 * page
    data[40 * page:41 * page] = bytes(range(256)) * (page // 256)
    path.write_bytes(bytes(data))


def test_report_of_a_store_with_a_damaged_page_is_one_line(main, tmp_path):
    store = filled_store(tmp_path / "s.sqlite")
    damage_a_page(store)
    code, _, err = main("report", "--store", str(store))
    one_line_refusal(code, err, "is damaged")


def test_sweep_refuses_a_damaged_store_before_its_first_trial(main, tmp_path):
    store = filled_store(tmp_path / "s.sqlite")
    damage_a_page(store)
    before = store.read_bytes()
    (tmp_path / "s.toml").write_text(SWEEP)
    code, out, err = main("sweep", "s.toml", "--store", str(store))
    one_line_refusal(code, err, "is damaged")
    assert "planned trial" not in out + err and store.read_bytes() == before


@pytest.mark.parametrize("command", ["report", "sweep"])
def test_a_store_whose_table_was_dropped_is_one_line_and_not_recreated(main, tmp_path, command):
    store = filled_store(tmp_path / "s.sqlite")
    db = sqlite3.connect(str(store))
    db.execute("drop table trials")
    db.commit()
    db.close()
    (tmp_path / "s.toml").write_text(SWEEP)
    args = ("report", "--store", str(store)) if command == "report" else ("sweep", "s.toml", "--store", str(store))
    code, _, err = main(*args)
    one_line_refusal(code, err, "has lost its trials table")
    db = sqlite3.connect(str(store))
    assert db.execute("select count(*) from sqlite_master where name = 'trials'").fetchone() == (0,)
    db.close()


HOLD = textwrap.dedent("""
    import sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("begin exclusive")
    print("held", flush=True)
    time.sleep(60)
""")


@pytest.mark.parametrize("command", ["report", "sweep"])
def test_a_store_another_process_holds_is_reported_locked_after_a_bounded_wait(main, tmp_path, monkeypatch, command):
    import time

    from compilescope import store as store_module

    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.5)
    store = filled_store(tmp_path / "s.sqlite")
    (tmp_path / "s.toml").write_text(SWEEP)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(store)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        started = time.monotonic()
        args = ("report", "--store", str(store)) if command == "report" else ("sweep", "s.toml", "--store", str(store))
        code, _, err = main(*args)
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    one_line_refusal(code, err, "is locked by another process (waited 0.5 s)")
    assert "not a compilescope" not in err and waited < 30


# --------------------------------------------------------------------------------------------
# warm_up / warmup: nothing loaded from outside the plan's folder, plans from elsewhere named
# --------------------------------------------------------------------------------------------


def sincos(x):
    return torch.sin(x) * torch.cos(x) + 1


def plan_inputs(shape):
    return (torch.randn(shape["n"]),)


def a_plan(**extra):
    from compilescope.model import StrategyOptions
    from compilescope.warmup import StrategyPlan, WarmupPlan

    sp = StrategyPlan("static", StrategyOptions(backend="eager"), shapes=({"n": 4}, {"n": 8}),
                      covers=({"n": 4}, {"n": 8}), compiles=2, frame_entries=2)
    return WarmupPlan("sincos", "8,4,8", 3, "eager", (sp,), recommended="static", **extra)


def planted_artifacts(folder: Path) -> Path:
    """What a hostile plan points at: a file that loading would unpickle."""
    from compilescope.execute.scheduler import cache_key

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{cache_key('static')}.bin"
    target.write_bytes(b"not to be loaded")
    return target


@pytest.mark.parametrize("where", ["absolute", "dotdot", "link"])
def test_a_plan_naming_artifacts_outside_its_folder_is_refused_unloaded(tmp_path, where, monkeypatch):
    from compilescope import compat
    from compilescope.errors import OptionError
    from compilescope.warmup import save_plan

    loaded = []
    monkeypatch.setattr(compat, "load_cache_artifacts", lambda data: loaded.append(data))
    outside = tmp_path / "outside"
    planted_artifacts(outside)
    home = tmp_path / "service"
    home.mkdir()
    if where == "link":
        (home / "artifacts").symlink_to(outside)
    named = {"absolute": str(outside), "dotdot": "../outside", "link": "artifacts"}[where]
    save_plan(a_plan(artifacts=named), home / "plan.json")
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with pytest.raises(OptionError, match="outside its own folder") as caught:
        compilescope.warm_up(compiled, home / "plan.json", plan_inputs)
    assert "\n" not in str(caught.value) and loaded == []


def test_warmup_refuses_an_artifacts_folder_outside_the_plan_files(main, tmp_path):
    (tmp_path / "svc").mkdir()
    code, _, err = main("warmup", "sincos", "--stream", "16,32", "--plan-out", "svc/plan.json",
                        "--artifacts", "elsewhere")
    one_line_refusal(code, err, "--artifacts 'elsewhere' is outside the plan file's folder")


def test_a_plan_from_another_workload_is_refused_and_another_torch_named(tmp_path, monkeypatch):
    from compilescope import compat
    from compilescope.errors import OptionError
    from compilescope.warmup import save_plan

    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with pytest.raises(OptionError, match="made for workload 'sincos', not 'encoder'"):
        compilescope.warm_up(compiled, a_plan(), plan_inputs, workload="encoder")
    old = a_plan(torch_version="2.6.0+cpu")
    here = re.escape(compat.torch_version())
    with pytest.warns(RuntimeWarning, match=rf"made under torch 2\.6\.0\+cpu; this is torch {here}"):
        assert compilescope.warm_up(compiled, old, plan_inputs).compiles == 2
    loaded = []
    monkeypatch.setattr(compat, "load_cache_artifacts", lambda data: loaded.append(data))
    planted_artifacts(tmp_path / "artifacts")
    save_plan(a_plan(torch_version="2.6.0+cpu", artifacts="artifacts"), tmp_path / "plan.json")
    with pytest.raises(OptionError, match="cache artifacts of another torch are not loaded"):
        compilescope.warm_up(compiled, tmp_path / "plan.json", plan_inputs)
    assert loaded == []


@pytest.mark.parametrize(("version", "message"), [(99, "schema_version 99"), ("2", "schema_version is str")])
def test_a_plan_of_another_schema_is_refused_by_name(tmp_path, version, message):
    from compilescope.errors import CompilescopeError
    from compilescope.warmup import save_plan

    save_plan(a_plan(), tmp_path / "plan.json")
    data = json.loads((tmp_path / "plan.json").read_text())
    data["schema_version"] = version
    (tmp_path / "plan.json").write_text(json.dumps(data))
    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with pytest.raises(CompilescopeError, match=message):
        compilescope.warm_up(compiled, tmp_path / "plan.json", plan_inputs)


@pytest.mark.parametrize("limit", [0, -3, True])
def test_a_recompile_limit_below_one_is_refused(tmp_path, limit):
    from compilescope.errors import CompilescopeError, OptionError
    from compilescope.warmup import save_plan

    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with pytest.raises(OptionError, match="a limit is a whole number of at least 1"):
        compilescope.warm_up(compiled, a_plan(), plan_inputs, recompile_limit=limit)
    save_plan(a_plan(), tmp_path / "plan.json")
    data = json.loads((tmp_path / "plan.json").read_text())
    data["plans"][0]["recompile_limit"] = 0
    (tmp_path / "plan.json").write_text(json.dumps(data))
    with pytest.raises(CompilescopeError, match="recompile_limit is 0; a limit is at least 1"):
        compilescope.warm_up(compiled, tmp_path / "plan.json", plan_inputs)


@pytest.mark.parametrize(("returns", "named"), [
    (lambda shape: None, "returned None"),
    (lambda shape: shape["n"], "returned an int (4)"),
    (lambda shape: (torch.randn(shape["n"]) for _ in range(1)), "returned a generator (an iterator"),
])
def test_make_inputs_returning_what_is_not_inputs_is_named_as_the_problem(returns, named):
    from compilescope.errors import OptionError

    compiled = torch.compile(sincos, backend="eager", dynamic=False)
    with pytest.raises(OptionError) as caught:
        compilescope.warm_up(compiled, a_plan(), returns)
    text = str(caught.value)
    assert text.startswith("make_inputs({'n': 4}) " + named) and "\n" not in text, text


def test_warmup_and_forecast_leave_no_torchinductor_folder_behind(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHINDUCTOR_")}
    env["TMPDIR"] = str(scratch)
    for args in (("warmup", "sincos", "--stream", "16,32,16", "--backend", "eager", "--no-measure"),
                 ("forecast", "sincos", "--stream", "16,32", "--backend", "eager")):
        done = subprocess.run([sys.executable, "-m", "compilescope.cli", *args], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr
        assert list(scratch.iterdir()) == [], (args, list(scratch.iterdir()))
