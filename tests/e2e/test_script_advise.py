"""advise --script: an unmodified script re-run under setting-only fixes, measured."""

from __future__ import annotations

import json

SCRIPT = """
import torch
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
f = torch.compile(m, backend="eager", dynamic=False)
for b in (4, 8, 12, 16, 20):
    f(torch.randn(b, 16))
"""


def test_advise_script_measures_dynamic_sources_against_the_script_as_it_is(cli_in_process, tmp_path):
    (tmp_path / "serve.py").write_text(SCRIPT)
    proc = cli_in_process("advise", "--json", "advice.json", "--script", "serve.py")  # each probe a process
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((tmp_path / "advice.json").read_text())
    assert saved["kind"] == "advise-script" and [r["verdict"] for r in saved["rows"]][0] == "baseline"
    assert saved["recommendation"]["proposal"]["settings"]["dynamic_sources"].startswith("L['args'][0]:0")
    out = proc.stdout
    # the table's rows, or off a terminal too narrow for it, one record per line ("run · verdict: …")
    rows = {line.split("│")[1].strip() if line.startswith("│") else line.split(" · ")[0]: line
            for line in out.splitlines() if line.startswith("│") or " · verdict: " in line}
    assert "5 (4)" in rows["as it is"]  # dynamic=False: one graph per batch size
    assert "recommended" in rows["dynamic_sources"] and "1 (0)" in rows["dynamic_sources"]
    # the module is compiled through a wrapper frame: the sources it sees are named too
    assert "L['args'][0]:0" in out and "TORCH_COMPILE_DYNAMIC_SOURCES=" in out


def test_probe_config_applies_a_setting_and_rejects_unknown_names(cli, cli_in_process, tmp_path):
    (tmp_path / "serve.py").write_text(SCRIPT)
    proc = cli("probe", "--config", "recompile_limit=2", "--json", "p.json", "serve.py")
    assert proc.returncode == 0, proc.stderr
    outcomes = [c["outcome"] for c in json.loads((tmp_path / "p.json").read_text())["compiles"]]
    assert outcomes.count("compiled") == 2 and "refused" in outcomes
    bad = cli_in_process("probe", "--config", "nope=1", "serve.py")  # refused before the script runs
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "unknown --config 'nope'" in bad.stderr
    # a value of the wrong kind too: before, recompile_limit=abc reached Dynamo (a TypeError in
    # the program, status 1) and 0 left a compile with no function named
    for item, said in (("recompile_limit=abc", "recompile_limit=abc: a whole number, 1 or more"),
                       ("recompile_limit=0", "recompile_limit=0: a whole number, 1 or more"),
                       ("automatic_dynamic_shapes=maybe", "automatic_dynamic_shapes=maybe: true or false"),
                       ("inductor.max_autotune=3", "inductor.max_autotune takes a bool (its default is False), "
                                                    "not 3")):
        bad = cli_in_process("probe", "--config", item, "serve.py")
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and said in bad.stderr, (item, bad.stderr)
        assert not bad.stdout  # the script never ran
    bad = cli_in_process("probe", "--strict", "serve.py")  # before: accepted, and did nothing
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--strict applies to --trace DIR" in bad.stderr


def test_advise_needs_a_workload_or_a_script(cli_in_process):
    proc = cli_in_process("advise")
    assert proc.returncode == 2 and "WORKLOAD" in proc.stderr


def test_settings_name_only_the_callers_inputs():
    """A resume frame's temporaries (``___stack0``) and a frame the caller does not call
    directly are no source a setting can usefully name."""
    from compilescope.torchtext import parse_guard_failure
    from compilescope.model import CompileId, CompileRecord, CompiledTarget, ProbeCall, ProbeResult
    from compilescope.script_advise import propose_settings

    def record(frame, attempt, function, reason, target=None):
        return CompileRecord(CompileId(frame, attempt), function, "m.py", 1, reasons=(reason,) if reason else (),
                             guard_failures=(parse_guard_failure(reason),) if reason else (), target=target)

    top = CompiledTarget("Model.forward", "m.py", 17, ("x",))
    base = ProbeResult(
        compiles=(record(0, 0, "forward", "", top),
                  record(0, 1, "forward", "tensor 'x' size mismatch at index 0. expected 5, actual 7", top),
                  record(1, 0, "torch_dynamo_resume_in_forward_at_9", ""),
                  record(1, 1, "torch_dynamo_resume_in_forward_at_9",
                         "tensor '___stack0' size mismatch at index 0. expected 5, actual 7"),
                  record(2, 0, "forward", ""),
                  record(2, 1, "forward", "tensor 'x' size mismatch at index 0. expected 5, actual 7")),
        calls=(ProbeCall("Model.forward", {"x": [5, 8]}), ProbeCall("Model.forward", {"x": [7, 8]})))
    proposals, fixes = propose_settings(base)
    settings = {p.name: p.settings for p in proposals}
    assert settings["dynamic_sources"] == {"dynamic_sources": "L['x']:0"}
    assert not any("mark_dynamic(___stack0" in step for _, step in fixes)
