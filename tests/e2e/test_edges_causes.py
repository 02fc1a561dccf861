"""Causes named for what they are, end to end: one script of small programs probed as it is
(``default``) and with every function compiled ``dynamic=False`` (``static``), each program a
case of its own —

* two module instances whose weights differ in shape share one code object: the parameters'
  shapes, the input that varies with them and a module attribute that varies with them (a
  LayerNorm's ``normalized_shape``) are not shape-reducible, and PyTorch's hint text never
  lands in the values;
* an int attribute of a module the caller passes keeps PyTorch's own advice for it;
* a Python number taken from ``x.size(0)`` held across a graph break is blamed on that break,
  at its line, with no setting that does not touch it (``capture_scalar_outputs`` is for
  ``.item()``); the same number handed to a helper with no graph break blames none;
* one value on record is not said to vary;
* a library cache's ``is_initialized`` on an object the caller passes is not a module attribute,
  and the tensors inside the cache are inputs the caller can mark;
* a training loop's eval pass is one entry per grad mode, expected.

Then ``advise`` on the graph-break case, and ``probe --check-fixes``: a fix that changes
nothing is not printed as the fix.
"""

from __future__ import annotations

import os

import pytest

from compilescope.analysis.build import build_probe_report
from compilescope.schema import load

from ..conftest import run_cli

PROGRAMS = '''
import sys

import torch

STATIC = sys.argv[1:] == ["static"]
compile = lambda fn: torch.compile(fn, backend="eager", dynamic=False if STATIC else None)  # noqa: E731


class Block(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = torch.nn.LayerNorm(n)
        self.lin = torch.nn.Linear(n, 4)

    def forward(self, x):
        return self.lin(self.ln(x)).relu()


class Scaled(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n

    def forward(self, x):
        return x * self.n


def scale(m, x):
    return m(x) + 1


class Layer:
    def __init__(self):
        self.is_initialized, self.keys = False, None


class Cache:
    def __init__(self):
        self.layers = [Layer()]


def size_across_break(x):
    n = x.size(0)
    torch._dynamo.graph_break()
    return x * n


def helper(x, n):
    return x.reshape(n, -1) * n


def size_to_helper(x):
    n = x.size(0)
    return helper(x, int(x.shape[0])) + n


def decode(x, cache):
    layer = cache.layers[0]
    if not layer.is_initialized:
        layer.keys, layer.is_initialized = x, True
    else:
        layer.keys = torch.cat([layer.keys, x], dim=-2)
    return layer.keys.sum(-2).relu()


def train_step(model, x):
    return model(x)


if __name__ == "__main__":
    blocks = [compile(Block(n)) for n in (8, 16)]
    for _ in range(2):
        for n, b in zip((8, 16), blocks):
            b(torch.randn(2, n))
    scaled = compile(scale)
    for n in (2, 3, 2):
        scaled(Scaled(n), torch.randn(4))
    across, handed = compile(size_across_break), compile(size_to_helper)
    for n in (4, 8, 16):
        across(torch.randn(n))
        handed(torch.randn(n, 2))
    step, cache = compile(decode), Cache()
    for _ in range(3):
        step(torch.randn(1, 1, 4), cache)
    lin, train = torch.nn.Linear(4, 4), compile(train_step)
    for _ in range(3):
        train(lin, torch.randn(2, 4)).sum().backward()
        with torch.no_grad():
            train(lin, torch.randn(2, 4))
'''


@pytest.fixture(scope="module", params=["default", "static"])
def probed(request, tmp_path_factory):
    """The programs probed once per mode: the printed report and the report model."""
    tmp = tmp_path_factory.mktemp(request.param)
    (tmp / "programs.py").write_text(PROGRAMS)
    proc = run_cli("probe", "--json", "p.json", "programs.py", request.param, timeout=600, cwd=tmp,
                   env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    assert proc.returncode == 0, proc.stderr
    report = build_probe_report(load(tmp / "p.json"))
    return request.param, {f.name: f for f in report.functions}, proc.stderr, tmp


def _causes(functions, name):
    return {(c.source, c.kind, c.dim): c for c in functions[name].causes}


def test_module_instances_of_different_widths_are_not_shape_reducible(probed):
    _, functions, printed, _ = probed
    causes = _causes(functions, "Block.forward")
    weight = causes[("L['self']._modules['lin']._parameters['weight']", "size", 1)]
    assert not weight.shape_reducible and "a parameter's shape" in weight.next_step
    assert weight.values == (8, 16)
    x = causes[("L['x']", "size", 1)]
    assert not x.shape_reducible and "varies with the module instance" in x.next_step
    (shape,) = [c for k, c in causes.items() if k[0].endswith(".normalized_shape")]
    assert not shape.shape_reducible and "varies with the module instance" in shape.next_step
    assert "allow_unspec_int_on_nn_module" not in shape.next_step  # a tuple, and it follows the weights
    assert not [c for c in causes.values() if c.shape_reducible]
    assert "HINT" not in " ".join(str(v) for c in causes.values() for v in c.values)
    assert "shape-reducible?: yes" not in "\n".join(ln for ln in printed.splitlines() if "_modules[" in ln)


def test_a_modules_int_passed_in_keeps_pytorchs_advice_and_no_hint_in_its_values(probed):
    _, functions, _, _ = probed
    (n,) = [c for k, c in _causes(functions, "scale").items() if k[0] == "L['m'].n"]
    assert n.values[0] == 2 and all(isinstance(v, int) for v in n.values), n.values  # no "(HINT: …)"
    assert "module attribute L['m'].n" in n.next_step and "allow_unspec_int_on_nn_module" in n.next_step
    assert "object the caller passes" not in n.next_step


def test_a_size_held_across_a_graph_break_names_that_break_and_no_unrelated_setting(probed):
    mode, functions, _, tmp = probed
    (resumed,) = [f for name, f in functions.items() if name.startswith("torch_dynamo_resume_in_size_across_break")]
    (n,) = [c for c in resumed.causes if c.source == "L['n']"]
    break_line = PROGRAMS.splitlines().index("    torch._dynamo.graph_break()") + 1
    assert f"graph break at {tmp / 'programs.py'}:{break_line} in size_across_break" in n.next_step, n.next_step
    assert f"used at {tmp / 'programs.py'}:{break_line + 1} " in n.next_step  # the whole path, not PyTorch's cut
    assert "capture_scalar_outputs" not in n.next_step and ".item()" not in n.next_step
    lines = {g.user_line for g in resumed.guards if g.user_line}
    assert lines and all(line.startswith(f"{tmp / 'programs.py'}:") for line in lines), lines  # guard rows too
    if mode == "static":
        assert n.description.startswith("L['n'] value varied over 4, 8, 16 →"), n.description  # each value a call brought
    x = [c for c in resumed.causes if c.source == "L['x']"]
    assert all("a tensor the program computes" not in c.next_step for c in x)


def test_a_size_handed_to_a_helper_blames_no_graph_break(probed):
    mode, functions, printed, _ = probed
    causes = functions["size_to_helper"].causes
    assert [(c.source, c.kind, c.dim) for c in causes] == [("L['x']", "size", 0)]
    assert causes[0].shape_reducible and "graph break" not in causes[0].next_step
    assert not [name for name in functions if name.startswith("torch_dynamo_resume_in_size_to_helper")]
    # no fix was run: by default the run's own automatic-dynamic compile judged it; under
    # dynamic=False none did, and the report says the fixes were not run, and how to run them
    seen = "seen in this run: PyTorch's automatic dynamic shapes compiled it dynamic" in causes[0].next_step
    unchecked = ("the setting fixes above (mark_dynamic, dynamic_sources, a config) are read from the guards, not "
                 "run: probe --check-fixes") in printed
    assert (seen, unchecked) == ((True, False) if mode == "default" else (False, True)), causes[0].next_step


def test_a_caches_flag_and_tensors_are_the_callers(probed):
    _, functions, _, _ = probed
    causes = _causes(functions, "decode")
    flag = causes[("L['cache'].layers[0].is_initialized", "module_attribute", None)]
    assert "cache.layers[0].is_initialized is a Python value on an object the caller passes" in flag.next_step
    assert "module attribute" not in flag.next_step and "allow_unspec_int_on_nn_module" not in flag.next_step
    assert flag.description.startswith("L['cache'].layers[0].is_initialized value changed from False (to what, PyTorch's reason does not say) →")
    assert "varied over" not in flag.description  # one value on record is no variation
    keys = causes[("L['cache'].layers[0].keys", "size", 1)]
    assert keys.shape_reducible and "torch._dynamo.mark_dynamic(cache.layers[0].keys, 1)" in keys.next_step
    assert "a tensor the program computes" not in keys.next_step


def test_a_training_loops_eval_pass_is_one_entry_per_grad_mode(probed):
    _, functions, _, _ = probed
    f = functions["train_step"]
    assert (f.compiles, [c.kind for c in f.causes]) == (2, ["grad_mode"])
    assert "one entry per grad mode, expected" in f.causes[0].next_step


def test_pytorchs_hint_after_a_value_is_cut_from_it():
    """PyTorch appends its hint to a guard that has no source comment right after the value."""
    from compilescope.torchtext import parse_guard_failure

    hint = ("(HINT: torch.compile considers integer attributes of the nn.Module to be static. If you are "
            "observing recompilation, you might want to make this integer dynamic using "
            "torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this integer into a tensor.)")
    g = parse_guard_failure(f"0/0: self._modules['gn'].num_groups == 2 {hint}")
    assert (g.kind, g.source, g.expected, g.reason) == (
        "module_attribute", "L['self']._modules['gn'].num_groups", 2, "self._modules['gn'].num_groups == 2")
    assert parse_guard_failure('0/0: fn.__closure__[0].cell_contents == True (HINT: guard on "flag")').expected is True


SPECIALISED = '''
import sys

import torch


@torch.compile(backend="eager")
def f(x):
    acc = x
    if sys.argv[1:] == ["loop"]:
        for i in range(int(x.shape[0])):  # the size becomes a Python number: each size its own graph
            acc = acc + i
    return acc * 2


if __name__ == "__main__":
    for n in (4, 8, 16, 32):
        f(torch.randn(n))
'''


@pytest.mark.parametrize("how", ["loop", "plain"])
def test_probe_checks_a_fix_before_printing_it(tmp_path, how):
    """``probe --check-fixes`` runs the script again under each setting fix, as ``advise
    --script`` does: marking a size the program turns into a loop bound changes nothing, and is
    not printed as the fix; marking a size it only computes with is, with what the run found."""
    (tmp_path / "s.py").write_text(SPECIALISED)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = run_cli("probe", "--check-fixes", "--json", "p.json", "s.py", how, timeout=600, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    (x,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("L['x'] dim 0 varied over 4, 8, 16, 32")]
    checked = [ln for ln in proc.stderr.splitlines() if ln.startswith('torch.compiler.config.dynamic_sources = "L')]
    assert len(checked) == 1 and "fixes above are read from the guards, not run" not in proc.stderr, proc.stderr
    if how == "loop":
        assert "shape-reducible?: no" in x and "mark_dynamic" not in x, x
        assert "marking it dynamic was run" in x and "did not reduce what it targets: 4 compile(s) against 4" in x
        assert "verdict: rejected" in checked[0]
    else:
        assert "shape-reducible?: yes" in x and "torch._dynamo.mark_dynamic(x, 0)" in x, x
        assert "checked, the script run again under dynamic_sources=\"L['x']:0\":" in x
        assert "verdict: accepted" in checked[0]
    # the records alone judge it too: PyTorch's automatic dynamic shapes compiled the size dynamic
    # at 0/1 — the loop made it static again there (marking it changes nothing), the plain
    # program kept it dynamic (marking it saves that one recompile)
    (cause,) = build_probe_report(load(tmp_path / "p.json")).functions[0].causes
    if how == "loop":
        assert not cause.shape_reducible and "mark_dynamic" not in cause.next_step
        assert cause.next_step.startswith("the program specialises this size: PyTorch's automatic dynamic shapes "
                                          "compiled it dynamic at compile 0/1"), cause.next_step
    else:
        assert cause.shape_reducible and "torch._dynamo.mark_dynamic(x, 0)" in cause.next_step
        assert "seen in this run: PyTorch's automatic dynamic shapes compiled it dynamic at compile 0/1" in \
            cause.next_step and "it saves the 1 recompile(s) that took" in cause.next_step


@pytest.mark.parametrize("how", ["loop", "plain", "static"])
def test_probe_judges_a_mark_dynamic_fix_by_its_own_compiles(tmp_path, cli_in_process, how):
    """Without ``--check-fixes``, probe reads a mark-dynamic fix from the run it watched:
    PyTorch's automatic dynamic shapes already compiled the varying size dynamic once it
    changed, so the entry that compile left shows whether the program keeps it dynamic. A size
    the program turns into a loop bound is no fix to print; one it keeps dynamic is, said as
    seen. Under ``dynamic=False`` no compile tried it: the fix is printed as read from the guards,
    not run, with the way to run it."""
    script = SPECIALISED.replace("@torch.compile(backend=\"eager\")",
                                 "@torch.compile(backend=\"eager\", dynamic=False if sys.argv[1:] == ['static'] "
                                 "else None)")
    (tmp_path / "s.py").write_text(script)
    proc = cli_in_process("probe", "s.py", how)
    assert proc.returncode == 0, proc.stderr
    (x,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("L['x'] dim 0 varied over 4, 8, 16, 32")]
    unchecked = ("the setting fixes above (mark_dynamic, dynamic_sources, a config) are read from the guards, not "
                 "run: probe --check-fixes") in proc.stderr
    if how == "loop":
        assert "shape-reducible?: no" in x and "mark_dynamic" not in x and "the program specialises this size" in x, x
        assert "4 compile(s), 3 recompile(s)" in proc.stderr and not unchecked
    elif how == "plain":
        assert "shape-reducible?: yes" in x and "torch._dynamo.mark_dynamic(x, 0)" in x and "seen in this run" in x, x
        assert "2 compile(s), 1 recompile(s)" in proc.stderr and not unchecked
    else:
        assert "shape-reducible?: yes" in x and "torch._dynamo.mark_dynamic(x, 0)" in x, x
        assert "seen in this run" not in x and "4 compile(s), 3 recompile(s)" in proc.stderr and unchecked



FROM_ONE = """
import torch


@torch.compile(backend="eager")
def f(x):
    return x.sin() * 2


for n in (1, 2, 3, 4):
    f(torch.randn(n, 3))
"""


@pytest.mark.parametrize("config", [(), ("--config", "dynamic_sources=L['x']:0")])
def test_a_recompile_that_left_size_one_is_not_said_to_be_saved_by_a_mark(tmp_path, cli_in_process, config):
    """A stream that starts at size 1 recompiles once, at 2, whether or not the dim is marked
    dynamic (Dynamo specialises sizes 0 and 1 in a marked dim too): the run's own compiles show
    it, so the step is the mark that covers size 1, not a mark-dynamic said to save that
    recompile. Under ``--config dynamic_sources=L['x']:0`` — that mark already in force — it
    recompiles all the same."""
    (tmp_path / "s.py").write_text(FROM_ONE)
    proc = cli_in_process("probe", *config, "s.py")
    assert proc.returncode == 0, proc.stderr
    assert "2 compile(s), 1 recompile(s)" in proc.stderr, proc.stderr
    (x,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("L['x'] dim 0 varied over 1, 2, 3, 4")]
    step = x.split("next step: ", 1)[1]
    assert step.startswith("mark it unbacked before each call: torch._dynamo.decorators.mark_unbacked(x, 0)"), x
    assert "left size 1" in step and "saves none of them" in step and "it saves the" not in step, x
    assert "torch._dynamo.mark_dynamic(x, 0)" not in step and 'dynamic_sources="' not in step, x
    # the report says what the program ran under
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("run under --config")]
    assert said == (["run under --config dynamic_sources=\"L['x']:0\""] if config else []), said



FAILS = """
import sys

import torch

torch._dynamo.config.suppress_errors = False  # PyTorch's default (the probe forks from the test's process)


@torch.compile(backend="eager")
def ranged(x, w):
    return (x @ w).softmax(-1)


@torch.compile(backend="eager")
def looped(x):
    for _ in range(3):
        x = x * 2
        torch._dynamo.graph_break()  # a break in a loop: Dynamo gives the whole frame up
    return x


w = torch.randn(16, 16)
for n in (4, 8, 32, 64):
    x = torch.randn(n, 16)
    torch._dynamo.mark_dynamic(x, 0, min=2, max=16)
    try:
        ranged(x, w)
    except Exception as exc:
        print(n, "raised", type(exc).__name__)
for n in (4, 8):
    looped(torch.randn(n))
"""


def test_a_failed_compile_says_what_became_of_the_call(tmp_path, cli_in_process):
    """The probe sees each compile end, as ``watch`` does, so a failure says what followed:
    a size outside a ``mark_dynamic`` range raised into the call (before: "Dynamo runs the frame
    eagerly", and "no shape setting" helps where a wider range does); a frame Dynamo gave up
    ran eagerly (before: only "compile 0/0 failed")."""
    (tmp_path / "s.py").write_text(FAILS)
    proc = cli_in_process("probe", "s.py")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    (ranged,) = [ln for ln in lines if ln.startswith("L['x'] dim 0 outside its range")]
    assert "its error raised into the call: widen the range the dim is marked with" in ranged, ranged
    assert "Dynamo runs the frame eagerly" not in ranged and "no shape setting" not in ranged, ranged
    raised = [ln for ln in lines if ln.startswith("compile 0/") and "ConstraintViolationError" in ln]
    assert raised and all(ln.endswith(": the error raised into the call") for ln in raised), raised
    (gave_up,) = [ln for ln in lines if "Call to `torch._dynamo.graph_break()`" in ln and ln.startswith("compile ")]
    assert gave_up.endswith(": Dynamo ran the frame eagerly; no later attempt of it is on record"), gave_up



INSIDE_ARGUMENTS = """
import torch


@torch.compile(backend="eager")
def step(batch):
    return batch["tokens"].sum(-1)


@torch.compile(backend="eager")
def fwd(**kwargs):
    return kwargs["input_ids"].float().sum(-1)


for n in (8, 16, 24):
    step({"tokens": torch.ones(2, n)})
    fwd(input_ids=torch.ones(2, n, dtype=torch.long))
"""


def test_a_tensor_inside_a_dict_or_keyword_arguments_is_the_callers_and_its_mark_is_python(tmp_path, cli_in_process):
    """A tensor the caller passes in a dict, or by keyword into ``**kwargs``, is the caller's
    input (before: "a tensor the program computes"), and the mark printed is Python (before:
    ``mark_dynamic(batch']['tokens, 1)``)."""
    (tmp_path / "s.py").write_text(INSIDE_ARGUMENTS)
    proc = cli_in_process("probe", "s.py")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    for source, expr in (("L['batch']['tokens']", "batch['tokens']"), ("L['kwargs']['input_ids']", "kwargs['input_ids']")):
        (line,) = [ln for ln in lines if ln.startswith(f"{source} dim 1 varied over 8, 16, 24")]
        assert f"torch._dynamo.mark_dynamic({expr}, 1)" in line and f'dynamic_sources="{source}:1"' in line, line
        assert "a tensor the program computes" not in line and "shape-reducible?: yes" in line, line
        compile(f"torch._dynamo.mark_dynamic({expr}, 1)", "advice", "eval")  # as printed: Python


ACROSS = '''
import torch
from compilescope import Workload


def build():
    def f(x):
        n = x.size(0)
        torch._dynamo.graph_break()
        return x * n
    return f


w = Workload("across", build, lambda s: (torch.randn(s["n"]),), ("n",), tuple({"n": n} for n in (4, 8, 16, 8)))
'''


def test_advise_blames_a_size_held_across_a_graph_break_on_that_break(tmp_path_factory, advised_runs):
    """As probe words it (above), so does ``advise``: its code fix for the number names the
    break's line, and proposes no setting that leaves it as it is."""
    tmp = tmp_path_factory.mktemp("across")
    (tmp / "wl.py").write_text(ACROSS)
    _, advice = advised_runs(f"{tmp / 'wl.py'}:w", tuple({"n": n} for n in (4, 8, 16, 8)))
    (fix,) = [f for f in advice.code_fixes if f.cause.startswith("L['n'] ")]
    break_line = ACROSS.splitlines().index("        torch._dynamo.graph_break()") + 1
    assert f"graph break at {tmp / 'wl.py'}:{break_line} in f" in fix.step, fix.step
    assert "capture_scalar_outputs" not in fix.step and ".item()" not in fix.step
    assert not [j for j in advice.rows if j.proposal is not None and "capture_scalar_outputs" in j.proposal.name]


DATACLASS_ARGUMENT = """
import dataclasses

import torch


@dataclasses.dataclass
class Batch:
    feats: torch.Tensor


@torch.compile(backend="eager")
def f(b):
    return b.feats.sum(-1)


for n in (5, 9):
    f(Batch(torch.ones(2, n)))
"""


def test_a_shape_stream_with_no_size_of_a_call_is_not_written(tmp_path, cli_in_process):
    """The calls pass their tensor inside a dataclass, which the probe's call record does not
    open: a stream of ``{}`` rows is no stream (before: written, and said written); it is not
    written, and the line says why and what records it."""
    (tmp_path / "s.py").write_text(DATACLASS_ARGUMENT)
    proc = cli_in_process("probe", "--stream-out", "s.jsonl", "s.py")
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "s.jsonl").exists()
    assert "shape stream not written to s.jsonl: a call passed no tensor the probe records" in proc.stderr
    assert "--record-shapes records those" in proc.stderr


GROWING_BUFFER = '''
import torch


class Buf(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mem", torch.zeros(3, 4))

    def forward(self, x):
        self.mem = torch.cat([self.mem, x], 0)  # state the forward grows: one buffer, one instance
        return self.mem.mean(0)


if __name__ == "__main__":
    b = torch.compile(Buf(), backend="eager")
    for _ in range(6):
        b(torch.randn(1, 4))
'''


def test_a_growing_buffer_is_named_a_buffer_and_its_setting_is_run_before_it_is_printed(tmp_path):
    """A buffer the forward grows is not "module instances whose weights differ": the cause
    says a buffer's shape changed, and the setting that reaches it (no mark does) is run by
    --check-fixes and printed where it lives, Dynamo's config."""
    (tmp_path / "s.py").write_text(GROWING_BUFFER)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = run_cli("probe", "--check-fixes", "s.py", timeout=600, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    (cause,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("L['self']._buffers['mem'] dim 0 varied over")]
    assert "a buffer's shape changed between calls" in cause and "weights differ" not in cause, cause
    assert "read from the guards, not run" not in proc.stderr.split(cause, 1)[1]  # it was run: no such note
    (checked,) = [ln for ln in proc.stderr.splitlines() if "force_parameter_static_shapes = False · verdict" in ln]
    assert checked.startswith("torch._dynamo.config.force_parameter_static_shapes = False · verdict: accepted"), checked
    assert "2 compile(s) against 6" in checked
