"""Bounded work, prompt ends: a million-request recording of a few shapes is read in bounded
memory with one dict per shape; a stream file's names are counted before any per-line work;
a forecast of it holds one key per shape; SIGTERM and SIGINT end forecast and warmup at once,
as they end run (no interpreter finalisation after Dynamo ran in the driver)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc

import pytest

from compilescope.errors import StreamError
from compilescope.stream import MAX_NAMES, parse_stream


def _recording(path, requests: int, sizes=(16, 32, 64)) -> None:
    rng = random.Random(0)
    lines = [json.dumps({"shape": {"x.0": n}, "dtypes": {"x": "float32"}}) + "\n" for n in sizes]
    path.write_text("".join(rng.choice(lines) for _ in range(requests)))


def test_a_million_requests_of_three_shapes_are_read_in_bounded_memory_one_dict_per_shape(tmp_path):
    path = tmp_path / "s.jsonl"
    _recording(path, 1_000_000)
    size = path.stat().st_size
    tracemalloc.start()
    try:
        stream = parse_stream(f"@{path}", ("n",))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(stream) == 1_000_000 and {s["n"] for s in stream} == {16, 32, 64}
    assert len({id(s) for s in stream}) == 3  # requests of one shape share one dict
    assert peak < 2 * size + 40e6, (peak, size)  # the file's bytes and text, and a pointer per request


def test_a_forecast_of_a_long_recording_shares_one_key_per_shape(tmp_path):
    from compilescope.forecast import forecast

    path = tmp_path / "s.jsonl"
    _recording(path, 50_000)
    report = forecast("sincos", f"@{path}", "static", backend="eager")
    (s,) = report.strategies
    assert (len(s.requests), s.traced, s.compiles) == (50_000, 3, 3)
    assert len({id(r.shape) for r in s.requests}) == 3
    assert not hasattr(s.requests[0], "__dict__")  # slotted: no per-request dict


def test_a_line_of_too_many_names_is_refused_at_the_first_line(tmp_path):
    path = tmp_path / "wide.jsonl"
    line = json.dumps({f"x{i}.0": i % 7 for i in range(1_500)}) + "\n"
    path.write_text(line * 2_000)  # 30 MB of it
    with pytest.raises(StreamError) as caught:
        parse_stream(f"@{path}", ("n",))
    assert str(caught.value) == (f"bad stream token '{path}:1': 1,500 dimension names on one line (at most "
                                 f"{MAX_NAMES}): not a stream of shapes")


def test_many_names_under_the_bound_are_matched_by_what_varies_across_distinct_shapes(tmp_path):
    path = tmp_path / "rec.jsonl"
    rows = []
    for i in range(3_000):
        n = (16, 32, 64)[i % 3]
        row = {f"w{k}.0": 8 for k in range(200)}  # 200 names that never vary
        row.update({"x.0": n, "mask.0": n})  # one dimension, recorded twice
        rows.append(json.dumps({"shape": row}))
    path.write_text("\n".join(rows) + "\n")
    stream = parse_stream(f"@{path}", ("n",))
    assert [s["n"] for s in stream[:4]] == [16, 32, 64, 16] and len({id(s) for s in stream}) == 3


def test_the_cli_refuses_a_wide_stream_file_in_one_line(main, tmp_path):
    (tmp_path / "wide.jsonl").write_text(json.dumps({f"k{i}": 1 for i in range(1_500)}) + "\n")
    code, _, err = main("forecast", "sincos", "--stream", "@wide.jsonl")
    assert code == 2 and err.count("\n") == 1 and "1,500 dimension names on one line" in err


SLOW = textwrap.dedent("""
    import atexit, os, time, torch
    from compilescope import Workload

    MARK = os.environ["SLOW_MARK"]


    def build():
        if os.path.exists(MARK + ".first"):  # the second strategy's dry run: wait to be ended
            open(MARK, "w").close()
            time.sleep(600)
        open(MARK + ".first", "w").close()
        atexit.register(lambda: open(MARK + ".finalised", "w").close())
        return lambda x: torch.sin(x) * torch.cos(x) + x.sum()


    w = Workload("slow", build, lambda s: (torch.randn(s["n"]),), ("n",), tuple({"n": n} for n in (16, 32, 16)))
""")


@pytest.mark.parametrize(("command", "sig"), [
    (("forecast", "--strategies", "default,static"), signal.SIGTERM),
    (("forecast", "--strategies", "default,static"), signal.SIGINT),
    (("warmup", "--stream", "16,32,16", "--no-measure", "--strategies", "default,static"), signal.SIGTERM),
])
def test_a_signal_ends_forecast_and_warmup_at_once(tmp_path, command, sig):
    """The command ends with 128 + the signal, its message said, and without the interpreter's
    finalisation (what made it take up to 15 s after Dynamo and inductor ran): an atexit hook
    the workload registered in the driver does not run, as under a plain signal."""
    (tmp_path / "slow.py").write_text(SLOW)
    mark = tmp_path / "mark"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHINDUCTOR_")}
    env["SLOW_MARK"] = str(mark)
    args = [sys.executable, "-m", "compilescope.cli", command[0], f"{tmp_path / 'slow.py'}:w", "--backend",
            "aot_eager", *command[1:]]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 300
        while not mark.exists():
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the second dry run never started"
            time.sleep(0.05)
        proc.send_signal(sig)
        err = proc.communicate(timeout=60)[1]  # a hang, not a timing: the test measures no duration
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert err.strip().endswith("compilescope: interrupted"), err
    assert not (tmp_path / "mark.finalised").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("torchinductor_")]
