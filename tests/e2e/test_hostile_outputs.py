"""Hostile environments, files and paths: nothing that is not ours is written over, and
nothing is read without a bound. The container user is root, so every check here is one
that ``os.access`` would have passed."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compilescope.errors import OptionError, ResultsError, StreamError
from compilescope.execute.journal import journal_path, read_journal
from compilescope.paths import write_atomic
from compilescope.paths import ResultsLock, check_output, lock_path, read_capped
from compilescope.schema import load
from compilescope.store import APPLICATION_ID, SCHEMA, Store, StoreError
from compilescope.stream import parse_stream
from compilescope.sweep import default_store_path

HERE = Path(__file__).resolve().parents[1]  # tests/
TEST_WORKLOADS = HERE / "workloads_for_tests.py"
FAST = ("--backend", "eager", "--samples", "3", "--budget", "0.01", "--warmup", "1")
MEMORY_LIMIT = 6 << 30  # a read that is not bounded fails here instead of taking the machine's memory


def bounded(args: list[str], cwd: Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess with its address space capped and a timeout."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    return subprocess.run([sys.executable, "-m", "compilescope.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=cap, env=dict(os.environ, **env))


def one_line_refusal(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("compilescope: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err


def nothing_ran(directory: Path) -> None:
    """No trial started: a run's journal is created before its first trial."""
    assert not list(directory.rglob("*.journal")), list(directory.rglob("*"))


def char_device(path: Path) -> Path:
    """A character device (/dev/null's numbers) of our own, so a regression replaces ours."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod is not permitted here")
    return path


def store_bytes(path: Path) -> bytes:
    return path.read_bytes()


def foreign_sqlite(path: Path) -> Path:
    db = sqlite3.connect(str(path))
    db.execute("create table notes (id integer primary key, body text)")
    db.execute("insert into notes (body) values ('not compilescope data')")
    db.commit()
    db.close()
    return path


RUN = ("run", "sincos", "--stream", "16,32", "--strategies", "eager", *FAST)


# --------------------------------------------------------------------------------------------
# Writing over what is not ours
# --------------------------------------------------------------------------------------------


class TestWritingOverWhatIsNotOurs:
    def test_json_on_a_device_node_is_refused_and_the_node_stays(self, main, tmp_path):
        node = char_device(tmp_path / "node")
        code, _, err = main(*RUN, "--json", str(node))
        one_line_refusal(code, err, "character device, not a regular file")
        assert stat.S_ISCHR(os.lstat(node).st_mode)
        nothing_ran(tmp_path)

    def test_json_on_a_fifo_and_a_socket_is_refused(self, main, tmp_path):
        import socket

        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        code, _, err = main(*RUN, "--json", str(fifo))
        one_line_refusal(code, err, "a FIFO, not a regular file")
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
        sock_path = tmp_path / "sock"
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(sock_path))
            code, _, err = main(*RUN, "--csv", str(sock_path))
        one_line_refusal(code, err, "a socket, not a regular file")
        nothing_ran(tmp_path)

    def test_json_on_a_symlink_to_proc_self_fd_is_refused_and_the_link_stays(self, main, tmp_path):
        link = tmp_path / "out.json"
        link.symlink_to("/proc/self/fd/1")
        code, _, err = main(*RUN, "--json", str(link))
        one_line_refusal(code, err, "symbolic link to /proc/self/fd/1, outside its directory")
        assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
        nothing_ran(tmp_path)

    def test_a_symlink_out_of_the_directory_is_refused_and_its_target_untouched(self, main, tmp_path):
        victim = tmp_path / "elsewhere" / "precious.txt"
        victim.parent.mkdir()
        victim.write_text("keep me")
        (tmp_path / "out").mkdir()
        link = tmp_path / "out" / "r.csv"
        link.symlink_to(victim)
        code, _, err = main(*RUN, "--csv", str(link))
        one_line_refusal(code, err, "outside its directory")
        assert victim.read_text() == "keep me" and link.is_symlink()

    @pytest.mark.parametrize("option, path", [
        ("--json", "/proc/x.json"), ("--csv", "/proc/x.csv"), ("--perfetto", "/sys/x.json"), ("--html", "/proc/1/x"),
    ])
    def test_outputs_under_proc_and_sys_are_refused_before_any_trial(self, main, tmp_path, option, path):
        code, out, err = main(*RUN, "--json" if option != "--json" else "--csv", str(tmp_path / "other"), option, path)
        one_line_refusal(code, err, f"{path!r}", "kernel filesystem")
        assert out == ""
        nothing_ran(tmp_path)
        assert not (tmp_path / "other").exists()

    def test_probe_outputs_under_proc_are_refused_before_the_script_runs(self, main, tmp_path):
        script = tmp_path / "script.py"
        script.write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
        code, _, err = main("probe", "--stream-out", "/proc/s.jsonl", str(script))
        one_line_refusal(code, err, "/proc/s.jsonl")
        assert not (tmp_path / "ran").exists()

    def test_csv_on_the_same_path_as_json_is_refused(self, main, tmp_path):
        code, _, err = main(*RUN, "--json", "r.json", "--csv", "r.json")
        one_line_refusal(code, err, "--csv and results name the same file")
        assert not (tmp_path / "r.json").exists()
        nothing_ran(tmp_path)

    def test_the_same_file_by_another_name_is_refused_too(self, main, tmp_path):
        (tmp_path / "r.json").write_text("{}")
        (tmp_path / "alias.json").hardlink_to(tmp_path / "r.json")
        code, _, err = main(*RUN, "--json", "r.json", "--perfetto", "./alias.json")
        one_line_refusal(code, err, "--perfetto and results name the same file")
        code, _, err = main(*RUN, "--json", "r.json", "--html", str(tmp_path / "r.json.journal"))
        one_line_refusal(code, err, "--html and the results journal name the same file")

    def test_report_never_writes_over_the_file_it_reads(self, main, tmp_path):
        (tmp_path / "r.json").write_text('{"schema_version": 2}')
        code, _, err = main("report", "r.json", "--csv", "r.json")
        one_line_refusal(code, err, "--csv and the results file name the same file")
        assert (tmp_path / "r.json").read_text() == '{"schema_version": 2}'

    def test_a_directory_that_is_a_file_or_a_directory_as_output_is_refused(self, main, tmp_path):
        (tmp_path / "plain").write_text("x")
        code, _, err = main(*RUN, "--json", "plain/r.json")
        one_line_refusal(code, err, "'plain/r.json': Not a directory")
        (tmp_path / "d").mkdir()
        code, _, err = main(*RUN, "--csv", "d")
        one_line_refusal(code, err, "is a directory")

    def test_a_refused_command_leaves_no_directory_behind(self, main, tmp_path):
        code, out, err = main(*RUN, "--json", "new/deeper/r.json", "--csv", "/proc/x.csv")
        one_line_refusal(code, err, "'/proc/x.csv'", "kernel filesystem")
        assert list(tmp_path.iterdir()) == []
        code, _, err = main(*RUN, "--json", "new/r.json", "--csv", "new/r.json")
        one_line_refusal(code, err, "--csv and results name the same file")
        assert list(tmp_path.iterdir()) == []

    def test_a_second_run_on_the_same_results_refuses_naming_the_first(self, tmp_path):
        """Two real runs at once on one --json: the second exits 2 at once with the first's pid and
        command; the first keeps its results, and its lock goes when it ends (here by SIGTERM)."""
        out = tmp_path / "r.json"
        cmd = [sys.executable, "-m", "compilescope.cli", "run", f"{TEST_WORKLOADS}:slow_eager", "--stream", "4,8",
               "--strategies", "eager", *FAST, "--json", str(out)]
        env = dict(os.environ, COMPILESCOPE_TEST_SLEEP="3")
        first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        try:
            deadline = time.time() + 240
            while not journal_path(out).exists() and time.time() < deadline and first.poll() is None:
                time.sleep(0.2)
            assert journal_path(out).exists() and lock_path(out).exists(), first.stderr.read() if first.poll() else ""
            journal_before = journal_path(out).read_bytes()
            second = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
            assert first.poll() is None, "the first run ended before the second was checked"
            one_line_refusal(second.returncode, second.stderr, f"pid {first.pid}", "being written by another run",
                             "slow_eager")
            assert journal_path(out).read_bytes().startswith(journal_before)  # untouched by the second
            first.send_signal(signal.SIGTERM)
            _, stderr = first.communicate(timeout=120)
        finally:
            if first.poll() is None:
                first.kill()
                first.wait()
        assert first.returncode == 128 + signal.SIGTERM, stderr
        assert load(out).workload.endswith("slow_eager")  # the partial results are the first run's
        assert not lock_path(out).exists()

    def test_a_held_lock_is_named_and_released_on_every_exit_path(self, main, tmp_path):
        out = tmp_path / "r.json"
        with ResultsLock(out, "compilescope run holder --json r.json"):
            code, _, err = main(*RUN, "--json", str(out))
            one_line_refusal(code, err, f"pid {os.getpid()}: compilescope run holder --json r.json")
            code, _, err = main("run", "--resume", str(out))
            one_line_refusal(code, err, f"pid {os.getpid()}")
        assert not lock_path(out).exists()
        # a run that fails after taking the lock (a bad stream) releases it
        code, _, err = main(*RUN[:2], "--stream", "@missing.jsonl", "--json", str(out))
        one_line_refusal(code, err, "missing.jsonl")
        assert not lock_path(out).exists()
        # a lock file left by a killed run (no flock on it) is taken over
        lock_path(out).write_text(json.dumps({"pid": 1, "command": "compilescope run dead"}))
        with ResultsLock(out, "next") as lock:
            assert json.loads(lock_path(out).read_text())["command"] == "next" and lock.fd is not None
        assert not lock_path(out).exists()

    @pytest.mark.parametrize("name", ["../../x", "../../../../x", "/etc/x", "a/../../b", "..", "x\0y"])
    def test_sweep_names_cannot_leave_the_results_directory(self, tmp_path, name):
        results_dir = tmp_path / "compilescope-results"
        store = default_store_path(name, results_dir)
        assert store.parent == results_dir and store.name.startswith("sweep-") and store.suffix == ".sqlite"
        assert "/" not in store.name and "\0" not in store.name
        assert os.path.realpath(store).startswith(str(results_dir) + os.sep)

    def test_a_sweep_named_out_of_its_directory_writes_nothing_outside(self, sweep_store):
        root, store = sweep_store
        assert store.parent == root / "a" / "b" / "c" / "compilescope-results"
        written = {p.relative_to(root) for p in root.rglob("*") if p.is_file()}
        assert written == {Path("a/b/c/sweep.toml"), store.relative_to(root)}, written

    def test_stores_carry_our_application_id(self, sweep_store):
        _, store = sweep_store
        db = sqlite3.connect(str(store))
        assert db.execute("pragma application_id").fetchone()[0] == APPLICATION_ID
        db.close()

    def test_report_store_reads_without_changing_the_store(self, sweep_store, main, tmp_path):
        _, store = sweep_store
        before = store_bytes(store)
        code, out, err = main("report", "--store", str(store))
        assert code == 0, err
        assert "sincos" in out
        assert store_bytes(store) == before

    def test_a_store_from_before_application_id_is_still_read_and_left_as_it_was(self, sweep_store, main, tmp_path):
        _, store = sweep_store
        legacy = tmp_path / "legacy.sqlite"
        legacy.write_bytes(store.read_bytes())
        db = sqlite3.connect(str(legacy))
        db.execute("pragma application_id = 0")
        db.commit()
        db.close()
        before = legacy.read_bytes()
        code, out, err = main("report", "--store", str(legacy))
        assert code == 0 and "sincos" in out, err
        assert legacy.read_bytes() == before

    def test_report_store_refuses_a_foreign_sqlite_file_and_adds_nothing(self, main, tmp_path):
        foreign = foreign_sqlite(tmp_path / "other.sqlite")
        before = foreign.read_bytes()
        code, _, err = main("report", "--store", str(foreign))
        one_line_refusal(code, err, "is not a compilescope results store", "notes")
        assert foreign.read_bytes() == before
        db = sqlite3.connect(str(foreign))
        db.execute("pragma application_id = 42")
        db.commit()
        db.close()
        code, _, err = main("report", "--store", str(foreign))
        one_line_refusal(code, err, "application_id 0x2a")

    def test_report_store_refuses_an_empty_sqlite_file_without_creating_tables(self, main, tmp_path):
        empty = tmp_path / "empty.sqlite"
        sqlite3.connect(str(empty)).close()
        code, _, err = main("report", "--store", str(empty))
        one_line_refusal(code, err, "is not a compilescope results store")
        db = sqlite3.connect(str(empty))
        assert db.execute("select count(*) from sqlite_master").fetchone() == (0,)
        db.close()

    def test_sweep_refuses_to_write_into_a_foreign_sqlite_file(self, main, tmp_path):
        foreign = foreign_sqlite(tmp_path / "other.sqlite")
        before = foreign.read_bytes()
        (tmp_path / "s.toml").write_text('workloads = ["sincos"]\nstrategies = ["eager"]\n'
                                          '[settings]\nbackend = ["eager"]\n')
        code, _, err = main("sweep", "s.toml", "--store", str(foreign))
        one_line_refusal(code, err, "is not a compilescope results store")
        assert foreign.read_bytes() == before
        with pytest.raises(StoreError, match="not a compilescope results store"):
            Store(foreign)
        assert foreign.read_bytes() == before

    def test_a_store_opened_read_only_cannot_be_written(self, tmp_path):
        path = tmp_path / "s.sqlite"
        Store(path).close()
        with Store(path, readonly=True) as store:
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                store.db.execute("create table x (a)")
        db = sqlite3.connect(str(path))
        db.executescript(SCHEMA)  # the schema statements are idempotent: nothing new
        db.close()


class TestWriteAtomic:
    """The writer itself, below every command: only a regular file (or a new path) is replaced."""

    def test_non_regular_files_are_never_replaced(self, tmp_path):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        (tmp_path / "dir").mkdir()
        for path in (fifo, tmp_path / "dir"):
            with pytest.raises(OSError):
                write_atomic(path, "x")
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and (tmp_path / "dir").is_dir()
        node = char_device(tmp_path / "node")
        with pytest.raises(OSError, match="not a regular file"):
            write_atomic(node, "x")
        assert stat.S_ISCHR(os.lstat(node).st_mode)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "fifo", "node"]  # no temp file left

    def test_links_out_of_the_directory_are_refused_links_inside_written_through(self, tmp_path):
        outside = tmp_path / "outside.txt"
        outside.write_text("keep")
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "out").symlink_to(outside)
        (tmp_path / "d" / "fd").symlink_to("/proc/self/fd/1")
        for name in ("out", "fd"):
            with pytest.raises(OSError, match="outside its directory"):
                write_atomic(tmp_path / "d" / name, "x")
        assert outside.read_text() == "keep"
        (tmp_path / "d" / "real.json").write_text("old")
        (tmp_path / "d" / "alias.json").symlink_to("real.json")
        write_atomic(tmp_path / "d" / "alias.json", "new")
        assert (tmp_path / "d" / "alias.json").is_symlink() and (tmp_path / "d" / "real.json").read_text() == "new"

    def test_check_output_tests_the_directory_by_creating_a_file(self, tmp_path, monkeypatch):
        monkeypatch.setattr(os, "access", lambda *a, **k: pytest.fail("os.access consulted"))
        assert check_output(tmp_path / "new" / "r.json", "results") == tmp_path / "new" / "r.json"
        assert list(tmp_path.iterdir()) == []  # tested at tmp_path: nothing created, the probe file gone
        with pytest.raises(OptionError, match="kernel filesystem"):
            check_output(Path("/proc/self/x.json"), "results")


# --------------------------------------------------------------------------------------------
# Unbounded reads
# --------------------------------------------------------------------------------------------


class TestUnboundedReads:
    def test_stream_from_dev_zero_is_refused_at_once(self, tmp_path):
        proc = bounded(["run", "sincos", "--stream", "@/dev/zero", "--strategies", "eager", *FAST,
                        "--json", "r.json"], tmp_path)
        one_line_refusal(proc.returncode, proc.stderr, "/dev/zero", "character device, not a regular file")
        assert not (tmp_path / "r.json").exists()

    def test_a_journal_that_leads_to_dev_zero_is_refused_at_once(self, tmp_path):
        (tmp_path / "r.json.journal").symlink_to("/dev/zero")
        proc = bounded(["run", "--resume", "r.json"], tmp_path)
        one_line_refusal(proc.returncode, proc.stderr, "r.json.journal", "/dev/zero")
        fifo = tmp_path / "fifo.journal"
        os.mkfifo(fifo)
        with pytest.raises(ResultsError, match="a FIFO, not a regular file"):
            read_journal(fifo)

    def test_report_of_dev_zero_is_refused_at_once(self, tmp_path):
        proc = bounded(["report", "/dev/zero"], tmp_path)
        one_line_refusal(proc.returncode, proc.stderr, "/dev/zero", "character device")

    def test_a_fifo_is_refused_without_waiting_for_a_writer(self, main, tmp_path):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        with pytest.raises(StreamError, match="a FIFO, not a regular file"):
            parse_stream(f"@{fifo}", ("n",))
        with pytest.raises(ResultsError, match="a FIFO, not a regular file"):
            load(fifo)
        code, _, err = main("report", str(fifo))
        one_line_refusal(code, err, "a FIFO")

    def test_files_above_the_cap_are_refused_before_reading(self, tmp_path, monkeypatch):
        big = tmp_path / "big.jsonl"
        big.write_text('{"n": 4}\n' * 200_000)  # 1.8 MB
        assert len(parse_stream(f"@{big}", ("n",))) == 200_000
        monkeypatch.setenv("COMPILESCOPE_MAX_READ_MB", "1")
        with pytest.raises(StreamError, match=r"larger than 1 MB \(set COMPILESCOPE_MAX_READ_MB"):
            parse_stream(f"@{big}", ("n",))
        results = tmp_path / "r.json"
        results.write_text(json.dumps({"schema_version": 2, "pad": "x" * 1_500_000}))
        with pytest.raises(ResultsError, match="larger than 1 MB"):
            load(results)
        monkeypatch.setenv("COMPILESCOPE_MAX_READ_MB", "lots")
        with pytest.raises(OptionError, match="COMPILESCOPE_MAX_READ_MB='lots'"):
            load(results)

    def test_the_cap_holds_for_a_file_that_reports_no_size(self, tmp_path):
        # /proc files say st_size 0; the read still stops at the cap
        data = read_capped("/proc/self/status", "status", limit=1 << 20)
        assert b"Pid:" in data
        with pytest.raises(Exception, match="larger than"):
            read_capped("/proc/self/maps", "maps", limit=16)

    def test_report_of_a_file_over_the_cap_is_one_line(self, main, tmp_path, monkeypatch):
        results = tmp_path / "r.json"
        results.write_text(json.dumps({"schema_version": 2, "pad": "x" * 2_000_000}))
        monkeypatch.setenv("COMPILESCOPE_MAX_READ_MB", "1")
        code, _, err = main("report", str(results))
        one_line_refusal(code, err, "larger than 1 MB")

    def test_a_sweep_file_that_is_a_device_is_refused(self, main, tmp_path):
        code, _, err = main("sweep", "/dev/zero")
        one_line_refusal(code, err, "sweep file '/dev/zero'", "character device")


@pytest.fixture(scope="module")
def sweep_store(tmp_path_factory):
    """One real sweep (one eager trial) whose file names it ``../../../x`` from a nested
    directory: its store must land in that directory's compilescope-results/."""
    root = tmp_path_factory.mktemp("named-sweep")
    cwd = root / "a" / "b" / "c"
    cwd.mkdir(parents=True)
    (cwd / "sweep.toml").write_text('name = "../../../x"\nworkloads = ["sincos"]\nstrategies = ["eager"]\n'
                                    '[settings]\nbackend = ["eager"]\n[streams]\nsincos = "16,32"\n'
                                    '[measure]\nsamples = 3\nbudget = 0.02\nwarmup = 1\n')
    proc = subprocess.run([sys.executable, "-m", "compilescope.cli", "sweep", "sweep.toml"], cwd=cwd,
                          capture_output=True, text=True, timeout=600, env=dict(os.environ, RAY_ADDRESS=""))
    assert proc.returncode == 0, proc.stderr
    stores = list((cwd / "compilescope-results").glob("sweep-*.sqlite"))
    assert len(stores) == 1, list(root.rglob("*"))
    return root, stores[0]


def test_a_path_byte_that_is_not_utf8_is_written_as_its_escape_not_a_crash(tmp_path):
    """A directory named with a byte that is not UTF-8 reaches the writers as a lone surrogate
    (Python's file-system decoding): the CSV, HTML and text outputs write its escape."""
    from compilescope.paths import write_atomic

    name = os.fsdecode(b"bad\xffdir")
    target = tmp_path / "out.csv"
    write_atomic(target, f"workload\n{name}/w.py:relu\n")
    assert target.read_text(encoding="utf-8") == "workload\nbad\\udcffdir/w.py:relu\n"


def test_a_newline_in_the_workloads_path_is_written_escaped_on_one_line(main, tmp_path):
    """A workload file in a directory whose name holds a newline: the forecast's head line and
    each note name it on one line, the newline written ``\\n`` (data, never a line break)."""
    directory = tmp_path / "a\nb"
    directory.mkdir()
    (directory / "w.py").write_text(
        "import torch\nfrom compilescope import Workload\n"
        "def w():\n    return Workload(name='w', build=lambda: (lambda x: x.sin() + 1),\n"
        "        make_inputs=lambda s: (torch.randn(s['n']),), dims=('n',), default_stream=({'n': 4}, {'n': 8}))\n")
    code, out, err = main("forecast", f"{directory}/w.py:w", "--backend", "eager", "--strategies", "default")
    assert code == 0, err
    head = out.splitlines()[0]
    assert head.startswith(f"compilescope forecast (dry run): {tmp_path}/a\\nb/w.py:w — 2 request(s)"), head
    assert not any(line.startswith("b/w.py") for line in (out + err).splitlines()), out + err
