"""Causes named for what they are: a parameter's shape is not shape-reducible (nor is an input
that varies only with it), one value is no variation, a value on an object the caller passes
is not a module attribute, a tensor inside such an object is an input the caller can mark, and
a training loop's eval pass is one entry per grad mode, expected. Records are as capture makes
them (the parameter and grad-mode cases are also run for real)."""

from __future__ import annotations

import dataclasses

import torch

import compilescope
from compilescope.analysis.advice import group_causes, inside_input
from compilescope.model import CompileId, CompileRecord, GuardFailure


def _compile(cid: str, *failures: GuardFailure, function: str = "forward") -> CompileRecord:
    return CompileRecord(CompileId.parse(cid), function, "m.py", 3, outcome="compiled", guard_failures=failures,
                         reasons=tuple(g.reason for g in failures), rejected_by=tuple("0/0" for _ in failures))


def _size(source: str, dim: int, expected: int, actual: int) -> GuardFailure:
    return GuardFailure(f"tensor '{source}' size mismatch at index {dim}. expected {expected}, actual {actual}",
                        "0/0", "size", source, dim, expected, actual)


def test_a_parameters_shape_and_the_input_that_varies_with_it_are_not_shape_reducible():
    weight = "L['self']._modules['lin']._parameters['weight']"
    (x, w) = group_causes((_compile("0/1", _size("L['x']", 1, 8, 16), _size(weight, 1, 8, 16)),))
    assert not w.shape_reducible and "a parameter's shape" in w.next_step and "compile each instance" in w.next_step
    assert not x.shape_reducible and "varies with the module instance" in x.next_step
    assert "a tensor the program computes" not in w.next_step + x.next_step


def test_two_real_module_instances_of_different_widths():
    class M(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.lin = torch.nn.Linear(n, 4)

        def forward(self, x):
            return self.lin(x).relu()

    a, b = torch.compile(M(8), backend="eager"), torch.compile(M(16), backend="eager")
    with compilescope.watch() as w:
        a(torch.randn(2, 8))
        b(torch.randn(2, 16))
    assert w.causes and not any(c.shape_reducible for c in w.causes), [(c.description, c.next_step) for c in w.causes]


def test_one_value_is_no_variation():
    (c,) = group_causes((_compile("0/1", GuardFailure("L['n'] == 200", "0/0", "value", "L['n']", None, 200, None)),))
    assert c.description == "L['n'] value changed from 200 (to what, PyTorch's reason does not say) → 1 compile(s)"
    assert "varied over" not in c.description


def test_a_value_on_an_object_the_caller_passes_is_not_a_module_attribute():
    flag = "L['cache'].layers[0].is_initialized"
    (c,) = group_causes((_compile("0/1", GuardFailure(f"{flag} == False", "0/0", "module_attribute", flag, None,
                                                      False, True)),))
    assert "cache.layers[0].is_initialized is a Python value on an object the caller passes" in c.next_step
    assert "allow_unspec_int_on_nn_module" not in c.next_step and "module attribute" not in c.next_step


def test_a_tensor_inside_an_argument_is_an_input_the_caller_can_mark():
    keys = "L['cache'].layers[0].keys"
    (c,) = group_causes((_compile("0/1", _size(keys, 2, 5, 6)),))
    assert c.shape_reducible and "torch._dynamo.mark_dynamic(cache.layers[0].keys, 2)" in c.next_step
    assert "a tensor the program computes" not in c.next_step
    assert inside_input("L['self']._modules['lin'].weight") is None and inside_input("L['x']") is None


def test_a_training_loops_eval_pass_is_one_entry_per_grad_mode():
    mode = GuardFailure("GLOBAL_STATE changed: grad_mode", "0/0", "grad_mode")
    (once,) = group_causes((_compile("0/1", mode),))
    assert "one entry per grad mode, expected" in once.next_step
    (again,) = group_causes((_compile("0/1", mode), _compile("0/2", mode)))
    assert "grad mode changed between calls" in again.next_step  # more than one entry per mode is a problem


def test_a_real_training_loop_with_an_eval_pass():
    lin = torch.compile(torch.nn.Linear(4, 4), backend="eager")
    with compilescope.watch() as w:
        for _ in range(3):
            lin(torch.randn(2, 4)).sum().backward()
            with torch.no_grad():
                lin(torch.randn(2, 4))
    (c,) = w.causes
    assert c.kind == "grad_mode" and "one entry per grad mode, expected" in c.next_step


def test_a_checked_fix_whose_run_broke_the_script_says_so_not_that_the_size_is_specialised():
    """probe --check-fixes: a dynamic_sources run that compiled as much as before shows the
    program specialises the size; a run rejected for another reason (the script exited
    otherwise) shows nothing of that, and the fix is still a shape fix, with what broke."""
    from compilescope.analysis.build import checked_cause
    from compilescope.report import Cause
    from compilescope.report.script import ScriptProposal, ScriptRun

    cause = Cause("L['x']", "size", 0, (4, 8, 16), ("0/0", "0/1", "0/2"), True, "mark it dynamic",
                  frame_source="L['x']")
    proposal = ScriptProposal("L['x'] dim 0 dynamic", {"dynamic_sources": "L['x']:0"}, "L['x'] dim 0")

    def run(why: str, exit_code: int = 0) -> ScriptRun:
        return ScriptRun(proposal.name, proposal, exit_code, None, 3, 2, 0, 0, 0.1, 1.0, "rejected", why)

    same = checked_cause(cause, [run("did not reduce what it targets: 3 compile(s) against 3")])
    assert not same.shape_reducible and "the program specialises this size" in same.next_step
    broke = checked_cause(cause, [run("the script exited with status 1 (as it was: 0)", exit_code=1)])
    assert broke.shape_reducible and "specialises" not in broke.next_step
    assert broke.next_step.startswith("mark it dynamic — checked") and "exited with status 1" in broke.next_step
    # one run that marked two sizes at once and compiled as much: which one is specialised, it cannot tell
    both = ScriptProposal("dynamic_sources", {"dynamic_sources": "L['x']:0,L['y']:0"}, "L['x'] dim 0; L['y'] dim 0")
    together = checked_cause(cause, [dataclasses.replace(run("did not reduce what it targets: 3 compile(s) against 3"),
                                                         proposal=both)])
    assert together.shape_reducible and "specialises this size" not in together.next_step
    assert "dynamic_sources=\"L['x']:0,L['y']:0\"" in together.next_step and "cannot tell" in together.next_step


def test_a_forecast_names_a_value_inside_an_argument_an_argument_attribute():
    from compilescope.analysis.advice import guard_kind

    assert guard_kind("module_attribute", "L['cache'].layers[0].is_initialized") == "argument_attribute"
    assert guard_kind("module_attribute", "L['kwargs']['cache'].layers[1].is_initialized") == "argument_attribute"
    assert guard_kind("module_attribute", "L['self'].training") == "module_attribute"
    assert guard_kind("module_attribute", "L['fn']._modules['1'].training") == "module_attribute"
    assert guard_kind("size", "L['cache'].layers[0].keys") == "size"


def _after_a_break(x):
    y = x * 2
    torch._dynamo.graph_break()
    return (y + 1).sum()


def _resume_compiles(fn, mark: bool) -> tuple[int, list]:
    torch._dynamo.reset()
    with compilescope.watch() as w:
        for batch in (2, 4, 8):
            x = torch.randn(batch, 3)
            if mark:
                torch._dynamo.mark_dynamic(x, 0)
            fn(x)
    resumed = [r for r in w.records if r.is_compile and r.function.startswith("torch_dynamo_resume")]
    return len(resumed), w.causes


def test_a_tensor_computed_before_a_break_is_not_reached_by_marking_the_input():
    # what the advice rests on, run for real: with the caller's input marked, the resume frame
    # still recompiles for the tensor made before the break — once by default (automatic dynamic
    # shapes then compile it dynamic), at every size (3) under dynamic=False; dynamic=True compiles it once
    marked, causes = _resume_compiles(torch.compile(_after_a_break, backend="eager"), mark=True)
    static, _ = _resume_compiles(torch.compile(_after_a_break, backend="eager", dynamic=False), mark=True)
    dynamic, _ = _resume_compiles(torch.compile(_after_a_break, backend="eager", dynamic=True), mark=False)
    assert (marked, static, dynamic) == (2, 3, 1)
    (resumed,) = [c for c in causes if c.source == "L['y']"]  # the resume frame's local
    assert resumed.shape_reducible
    assert "which no mark reaches" in resumed.next_step and "compile with dynamic=True" in resumed.next_step
    assert not resumed.next_step.startswith("a tensor the program computes")


def test_a_cause_whose_every_compile_failed_is_no_limit_to_raise():
    rel = GuardFailure("x.size()[0] != 32", "0/1", "relation", None, None, None, None, involves=("L['x'] dim 0",))
    failed = dataclasses.replace(_compile("0/2", rel), outcome="failed", fail_type="Unsupported")
    (c,) = group_causes((failed,))
    assert not c.shape_reducible and "recompile_limit" not in c.next_step.split("—")[1]
    assert c.next_step.startswith("every compile it caused failed (compile 0/2: Unsupported)")


def test_a_threshold_step_does_not_say_a_kernel_chose_where_the_users_branch_may_have():
    """A ``<=`` bound on a size comes from a branch on it in the user's code as often as from
    a kernel's choice: the step names both and the line PyTorch cites (before: "a kernel choice
    switches there", said of ``if y.shape[1] > 10``)."""
    from compilescope.analysis.advice import relation_step

    step = relation_step(("L['y'].size()[1] <= 10",), ("L['y'] dim 1",), ("s.py:7",))
    assert "a branch on the size, or a kernel choice of an op it calls at s.py:7" in step, step
    assert "(a kernel choice switches there)" not in step


def test_a_compile_counts_for_the_causes_that_failed_the_newest_entry():
    """x dim 0 changes (0/1 makes it dynamic), then dim 1: the dynamic entry fails on dim 1
    alone, so 0/2 is dim 1's — not dim 0's too, though the first, static entry failed on it."""
    f = torch.compile(lambda x: x @ x.T, backend="eager")
    with compilescope.watch() as w:
        for shape in ((2, 4), (3, 4), (4, 4), (3, 5)):
            f(torch.randn(*shape))
    by_dim = {c.dim: c for c in w.causes if c.kind == "size"}
    assert by_dim[0].compile_ids == ("0/1",) and by_dim[1].compile_ids == ("0/2",), [c.description for c in w.causes]
    assert "→ 1 compile(s)" in by_dim[0].description and "→ 1 compile(s)" in by_dim[1].description


def test_a_cause_that_failed_only_an_older_entry_has_no_compile_of_its_own():
    newer = dataclasses.replace(_size("L['x']", 1, 8, 16), failed_entry="0/1")
    older = (_size("L['x']", 0, 4, 8), _size("L['x']", 1, 8, 16))  # on entry 0/0
    (dim1, dim0) = group_causes((_compile("0/2", newer, *older),))
    assert dim1.compile_ids == ("0/2",) and dim0.compile_ids == ()
    assert dim0.description.endswith("→ no compile of its own (it failed only some of the cache entries tried; a compile counts "
                                     "for what failed every entry)")
    assert not dim0.shape_reducible and dim0.next_step.startswith("nothing to do for it alone")


def test_a_tensor_slot_that_is_none_on_some_calls_is_one_type_cause_however_worded():
    """PyTorch words it "expected type of … to be a tensor type, ' but found <class 'NoneType'>";
    the guard walk finds the same slot as a TYPE_MATCH leaf: one cause, not two texts."""
    from compilescope.torchtext import parse_guard_failure

    said = parse_guard_failure("0/1: expected type of 'kwargs['cache'].keys' to be a tensor type, ' but found "
                               "<class 'NoneType'>")
    walked = dataclasses.replace(parse_guard_failure(
        "___check_type_id(L['kwargs']['cache'].keys, 94373321714304), type=<class 'torch.Tensor'>"), failed_entry="0/1")
    assert (said.kind, said.source, said.expected, said.actual) == ("type", "L['kwargs']['cache'].keys", "Tensor",
                                                                    "NoneType")
    assert (walked.kind, walked.source) == ("type", said.source)
    (c,) = group_causes((_compile("0/2", said, walked),))
    assert c.description == "L['kwargs']['cache'].keys type varied over Tensor, NoneType → 1 compile(s)"
    assert not c.shape_reducible and "kwargs['cache'].keys is a tensor on some calls and None on others" in c.next_step


def test_a_cause_that_only_some_entries_failed_did_not_make_the_compile():
    """A fresh cache's None slot fails the newest entry (compiled with a tensor there) while the
    older one, compiled with None, fails on x's size alone: the compile is the size's."""
    slot = GuardFailure("expected type of 'cache.keys' to be a tensor type, ' but found <class 'NoneType'>", "0/1",
                        "type", "L['cache'].keys", None, "Tensor", "NoneType")
    size_newest = dataclasses.replace(_size("L['x']", 0, 4, 8), failed_entry="0/1")
    size_oldest = _size("L['x']", 0, 4, 8)  # entry 0/0
    by_kind = {c.kind: c for c in group_causes((_compile("0/2", size_newest, slot, size_oldest),))}
    assert by_kind["size"].compile_ids == ("0/2",) and by_kind["type"].compile_ids == ()


def test_an_entry_compiled_with_none_and_a_list_turned_tuple_are_type_causes_in_their_own_words():
    from compilescope.torchtext import parse_guard_failure

    none = parse_guard_failure("0/0: cache.keys is None")
    assert (none.kind, none.source, none.expected) == ("type", "L['cache'].keys", "NoneType")
    filled = GuardFailure("expected type of 'cache.keys' to be a tensor type, ' but found <class 'NoneType'>", "0/1",
                          "type", "L['cache'].keys", None, "Tensor", "NoneType")
    (slot,) = group_causes((_compile("0/1", none), _compile("0/2", filled)))
    assert slot.description == "L['cache'].keys type varied over NoneType, Tensor → 2 compile(s)"
    assert "a tensor on some calls and None on others" in slot.next_step
    listed = parse_guard_failure("1/0: ___check_type_id(s, 139873474671424), type=<class 'list'>")
    (kind,) = group_causes((_compile("1/1", listed),))
    assert kind.kind == "type" and "s changed type between calls" in kind.next_step and "None" not in kind.next_step


def test_a_limit_the_script_sets_itself_is_not_tested_and_a_raised_limit_is_judged_by_its_refusals():
    import types

    from compilescope.report.script import ScriptProposal
    from compilescope.script_advise import _overridden

    raised = ScriptProposal("recompile_limit 6", {"recompile_limit": 6}, "1 refused", target="refused")
    assert _overridden(raised, types.SimpleNamespace(recompile_limit=2)).startswith(
        "not tested: the script sets the recompile limit itself (2 in force as it ended, not 6)")
    assert _overridden(raised, types.SimpleNamespace(recompile_limit=6)) == ""
    assert _overridden(ScriptProposal("d", {"dynamic_sources": "L['x']:0"}, "x"),
                       types.SimpleNamespace(recompile_limit=2)) == ""
    assert (ScriptProposal("cfg", {"capture_scalar_outputs": True, "force_parameter_static_shapes": False}, "x").code
            == "torch._dynamo.config.capture_scalar_outputs = True; "
               "torch._dynamo.config.force_parameter_static_shapes = False")


def test_a_mark_never_names_a_builtin_the_pasted_line_would_mark_instead():
    """nn.Sequential.forward(input), called model(x): the frame names the input ``input``,
    which pasted as is marks Python's builtin; the mark names a placeholder instead."""
    (c,) = group_causes((_compile("0/1", _size("L['input']", 0, 2, 3)),))
    assert "torch._dynamo.mark_dynamic(<the tensor passed as input>, 0)" in c.next_step, c.next_step
    (x,) = group_causes((_compile("0/1", _size("L['x']", 0, 2, 3)),))
    assert "torch._dynamo.mark_dynamic(x, 0)" in x.next_step


def test_a_python_values_cause_lists_the_value_each_call_brought():
    """PyTorch's text for a value guard names only the value the entry holds (``n == 5``): the
    value the call brought is read from the call's own locals, so the last value is listed too
    (before: "varied over 2, 3, 5" where n also took 6, which compiled)."""
    def loop(x, n):
        for _ in range(n):
            x = x * 1.01
        return x

    f = torch.compile(loop, backend="eager")
    with compilescope.watch() as w:
        for n in (2, 3, 5, 6):
            f(torch.randn(4), n)
    (n,) = [c for c in w.causes if c.source == "L['n']"]
    assert n.description.startswith("L['n'] value varied over 2, 3, 5, 6 → 3 compile(s)"), n.description
