"""probe against PyTorch as the oracle.

Each scenario script runs once, under ``compilescope probe`` with PyTorch's own account
switched on in the same process (``TORCH_LOGS=recompiles_verbose,graph_breaks`` and
``TORCH_TRACE``). The probe must report the same recompiles with the same reasons for every
rejecting cache entry, and the same graph-break locations, as PyTorch logged for that run;
``probe --trace`` on the run's trace must agree with the probe. That the probe changes
nothing PyTorch does is shown on a few scenarios (``PLAIN_TOO``) also run plainly: the same
logs and the same compiles as under the probe (test_probe_transparency.py shows the same for
exit status, stdout, argv and signals).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compilescope.compat import is_recompile_limit_failure, reason_name
from compilescope.torchtext import split_reason

from ..conftest import started_cli_server

SCENARIOS = Path(__file__).resolve().parents[1] / "probe_scenarios"
SCRIPTS = sorted(p.name for p in SCENARIOS.glob("*.py"))
_LOG = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ \S+\] \[(?P<cid>[^\]]+)\] \[__(?P<art>\w+)\] ?(?P<msg>.*)$")


Recompiles = list[tuple[str, str, list[tuple[str | None, str]]]]


def parse_torch_logs(stderr: str) -> tuple[Recompiles, set[tuple[str, int]]]:
    """recompiles_verbose → [(compile id, function, [(rejecting entry, reason)…])] in order
    (ids repeat after a reset); graph_breaks → locations."""
    recompiles: Recompiles = []
    breaks: set[tuple[str, int]] = set()
    expect_entry = False
    for line in stderr.splitlines():
        m = _LOG.match(line)
        if not m:
            continue
        cid, art, msg = m["cid"].split("_")[0], m["art"], m["msg"].strip()
        if art == "recompiles_verbose":
            if msg.startswith("Recompiling function"):
                function = msg.split()[2]
                recompiles.append((cid, function, []))
            elif re.match(r"guard \d+ failures:", msg):
                expect_entry = True
            elif expect_entry and msg.startswith("- "):
                recompiles[-1][2].append(split_reason(msg[2:]))
                expect_entry = False
        elif art == "graph_breaks":
            at = re.match(r"Graph break in user code at (.+):(\d+)$", msg)
            if at:
                breaks.add((at[1], int(at[2])))
    return recompiles, breaks


def probe_view(data: dict) -> tuple[Recompiles, set[tuple[str, int]]]:
    recompiles = []
    for c in data["compiles"]:
        if c["rejected_by"]:
            recompiles.append((c["compile_id"], c["function"],
                               [split_reason(f"{e}: {r}") for e, r in zip(c["rejected_by"], c["reasons"])]))
    breaks = {(b["filename"], b["line"]) for b in data["graph_breaks"]}
    return recompiles, breaks


LOGS = "recompiles_verbose,graph_breaks"
# Scenarios also run plainly, as python runs them: between them a recompile limit's refusals,
# a training step's backward compiles, a graph break, a reset and dynamic shapes.
PLAIN_TOO = ("recompile_limit.py", "train_step.py", "break_nested.py", "reset_between.py", "shape_dynamic.py")
AT_ONCE = 2
# The scenarios `make test-torch` cross-checks under each torch (the compat marker): a size,
# a bool and a grad-mode recompile, a graph break's resume frame, the recompile limit, a
# reset, a training step's backward and two dims.
CROSS_CHECKED = ("shape_default.py", "bool_arg.py", "grad_mode.py", "break_nested.py", "recompile_limit.py",
                 "reset_between.py", "train_step.py", "two_dims.py")
USES = {"test_training_step_backward_is_part_of_its_forward_compile": "train_step.py",
        "test_reset_starts_a_new_epoch_and_each_reason_stays_on_its_compile": "reset_between.py"}
CROSS_CHECK = pytest.mark.compat("probe = TORCH_LOGS")


def scripts(names: tuple[str, ...] | list[str]) -> list[object]:
    return [pytest.param(n, marks=CROSS_CHECK) if n in CROSS_CHECKED else n for n in names]


def _needed(request: pytest.FixtureRequest) -> set[str]:
    """The scenarios the selected tests of this module read (all of them in `make test`)."""
    names: set[str] = set()
    for item in request.session.items:
        if getattr(item, "module", None) is not request.module:
            continue
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "name" in callspec.params:
            names.add(callspec.params["name"])
        elif getattr(item, "originalname", "") in USES:
            names.add(USES[item.originalname])
    return names


@pytest.fixture(scope="module")
def runs(tmp_path_factory, request):
    """Every scenario the selected tests read, once under probe, PyTorch's logs and trace on in
    that process; the PLAIN_TOO scenarios also once plainly with the same logs and a trace of
    their own. Each is forked, one at a time, by a CLI server that imported torch with those logs
    on (tests/cli_server.py: each child writes a trace file of its own, moved to the scenario's
    directory as it ends); where none can start, fresh interpreters, a few at a time."""
    out = {}
    tmp = tmp_path_factory.mktemp("probe")
    needed = _needed(request)
    jobs = ([(name, "probe") for name in SCRIPTS if name in needed]
            + [(name, "plain") for name in PLAIN_TOO if name in needed])

    def keep(name: str, kind: str, rc: int, err: str, trace: Path, json_path: Path) -> None:
        run = out.setdefault(name, dict(tmp=tmp))
        if kind == "probe":
            run.update(probe_rc=rc, probe_err=err, data=json.loads(json_path.read_text()), trace=trace)
        else:
            run.update(plain_rc=rc, plain_err=err, plain_trace=trace)

    incoming = tmp / "incoming.trace"
    logged = dict(os.environ, TORCH_LOGS=LOGS, TORCH_TRACE=str(incoming))
    with started_cli_server(tmp / "server", logged) as server:
        if server is not None:
            for name, kind in jobs:
                script, trace, json_path = SCENARIOS / name, tmp / f"{name}.{kind}.trace", tmp / f"{name}.json"
                what = ({"argv": ["probe", "--json", str(json_path), str(script)]} if kind == "probe"
                        else {"script": str(script)})
                for stale in incoming.glob("*"):  # none of this run's
                    stale.unlink()
                done = server.run(what, cwd=tmp, env=logged, timeout=900)
                trace.mkdir()
                for log in incoming.glob("*"):
                    log.rename(trace / log.name)
                keep(name, kind, done.returncode, done.stderr, trace, json_path)
            return out
    for first in range(0, len(jobs), AT_ONCE):
        started = []
        for name, kind in jobs[first:first + AT_ONCE]:
            script = SCENARIOS / name
            trace = tmp / f"{name}.{kind}.trace"
            env = dict(os.environ, TORCH_LOGS=LOGS, TORCH_TRACE=str(trace))
            json_path = tmp / f"{name}.json"
            cmd = ([sys.executable, "-m", "compilescope.cli", "probe", "--json", str(json_path), str(script)]
                   if kind == "probe" else [sys.executable, str(script)])
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                    cwd=tmp)
            started.append((name, kind, proc, trace, json_path))
        for name, kind, proc, trace, json_path in started:
            err = proc.communicate(timeout=900)[1]  # a CUDA build of torch imports slowly on a loaded CPU
            keep(name, kind, proc.returncode, err, trace, json_path)
    return out


def test_corpus_is_large_enough():
    assert len(SCRIPTS) >= 20


@pytest.mark.parametrize("name", scripts(SCRIPTS))
def test_probe_matches_torch_logs(runs, name):
    run = runs[name]
    assert run["probe_rc"] == 0, run["probe_err"][-2000:]
    log_recompiles, log_breaks = parse_torch_logs(run["probe_err"])
    probe_recompiles, probe_breaks = probe_view(run["data"])
    assert probe_recompiles == log_recompiles
    assert probe_breaks == log_breaks


@pytest.mark.parametrize("name", scripts(PLAIN_TOO))
def test_probe_changes_nothing_pytorch_logs_or_compiles(runs, name):
    """The same program under python and under probe: PyTorch logs the same recompiles with
    the same reasons and the same graph breaks, and its trace holds the same compiles."""
    run = runs[name]
    assert run["plain_rc"] == run["probe_rc"] == 0, run["plain_err"][-2000:]
    plain = parse_torch_logs(run["plain_err"])
    assert plain == parse_torch_logs(run["probe_err"])
    assert plain[0] or plain[1]  # something to compare: a recompile or a graph break
    assert _trace_forward_compiles(run["plain_trace"]) == _trace_forward_compiles(run["trace"])


@pytest.mark.parametrize("name", scripts(SCRIPTS))
def test_probe_trace_matches_probe(runs, name):
    from compilescope.probe.trace import read_trace
    from compilescope.analysis.outputs import probe_file
    from compilescope.render.json import RENDERER

    run = runs[name]
    traced = json.loads(RENDERER.render(probe_file(read_trace(run["trace"], strict=False))))
    live = run["data"]
    assert [(c["compile_id"], c["epoch"], c["function"], c["outcome"]) for c in traced["compiles"]] == [
        (c["compile_id"], c["epoch"], c["function"], c["outcome"]) for c in live["compiles"]]
    assert probe_view(traced)[0] == probe_view(live)[0]
    assert {(b["filename"], b["line"]) for b in traced["graph_break_occurrences"]} == probe_view(live)[1]


def _trace_forward_compiles(trace: Path) -> list[str]:
    """PyTorch's own count: forward ``compilation_metrics`` events that compiled or failed
    (not those the recompile limit refused), in order."""
    out = []
    for log in sorted(trace.glob("*.log")):
        for line in log.read_text().splitlines():
            m = re.search(r'\{"compilation_metrics": (\{.*\})', line)
            if not m:
                continue
            meta = json.loads(line[line.index("{"):])["compilation_metrics"]
            if not is_recompile_limit_failure(meta.get("fail_type"), meta.get("fail_reason")):
                out.append(meta["compile_id"])
    return out


@pytest.mark.parametrize("name", scripts(SCRIPTS))
def test_probe_counts_pytorchs_frame_compiles(runs, name):
    """The compile count is PyTorch's: its forward compilation_metrics events, refusals and
    lazy backward compiles left out; no frame without a name."""
    run = runs[name]
    compiles = [c for c in run["data"]["compiles"] if c["outcome"] != "refused"]
    assert [c["compile_id"] for c in compiles] == _trace_forward_compiles(run["trace"])
    assert all(c["function"] and c["line"] > 0 for c in run["data"]["compiles"])
    assert run["data"]["summary"]["compiles"] == len(compiles)


@CROSS_CHECK
def test_training_step_backward_is_part_of_its_forward_compile(runs):
    data = runs["train_step.py"]["data"]
    assert [c["compile_id"] for c in data["compiles"]] == ["0/0", "0/1", "0/2"]
    assert all(c["backward_compile_s"] and c["backward_compile_s"] > 0 for c in data["compiles"])
    assert all(c["target"]["name"] == "Sequential.forward" for c in data["compiles"])
    reasons = [c["guard_failures"][0]["source"] for c in data["compiles"][1:]]
    assert reasons == ["L['input']", "L['input']"]  # named by Sequential.forward's parameter


@CROSS_CHECK
def test_reset_starts_a_new_epoch_and_each_reason_stays_on_its_compile(runs):
    from compilescope.probe.trace import read_trace
    from compilescope.analysis.outputs import probe_file
    from compilescope.render.json import RENDERER

    run = runs["reset_between.py"]
    for data in (run["data"], json.loads(RENDERER.render(probe_file(read_trace(run["trace"]))))):
        got = [(c["compile_id"], c["epoch"], c["reasons"]) for c in data["compiles"]]
        assert got == [
            ("0/0", 0, []),
            ("0/1", 0, [f"tensor '{reason_name('x')}' size mismatch at index 0. expected 8, actual 16"]),
            ("0/0", 1, []),
            ("0/1", 1, [f"tensor '{reason_name('x')}' size mismatch at index 0. expected 8, actual 16"]),
        ]
