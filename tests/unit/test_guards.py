"""Guard-failure parsing, with PyTorch as the oracle: the texts come from real recompiles."""

from __future__ import annotations

import pytest
import torch

from compilescope.compat import reason_name
from compilescope.torchtext import parse_guard_failure, split_reason
from compilescope.collect.capture import CaptureSession

pytestmark = pytest.mark.compat("guard reasons")

FLAG = True


def _reasons(fn, calls, **compile_kwargs):
    """Call ``torch.compile(fn)`` with each kwargs dict; return every parsed guard failure."""
    torch.compiler.reset()
    compiled = torch.compile(fn, backend="eager", **compile_kwargs)
    capture = CaptureSession().install()
    found = []
    try:
        for kwargs in calls:
            compiled(**kwargs)
            got = capture.poll(call_index=0, arguments=kwargs)
            found.extend(r for e in got.compiles for r in e.guard_failures)
            found.extend(got.unattributed)
    finally:
        capture.uninstall()
    return found


def _sin(x):
    return x.sin()


def test_size_mismatch_structured():
    (g,) = _reasons(_sin, [dict(x=torch.ones(16)), dict(x=torch.ones(32))])
    assert g.reason == f"tensor '{reason_name('x')}' size mismatch at index 0. expected 16, actual 32"
    assert (g.source, g.kind, g.dim, g.expected, g.actual, g.failed_entry) == ("L['x']", "size", 0, 16, 32, "0/0")


def test_every_rejecting_entry_is_reported():
    found = _reasons(_sin, [dict(x=torch.ones(16)), dict(x=torch.ones(32)), dict(x=torch.ones(64))], dynamic=False)
    assert [(g.failed_entry, g.expected, g.actual) for g in found] == [("0/0", 16, 32), ("0/1", 32, 64), ("0/0", 16, 64)]


def test_symbolic_size_guard_gets_actual_from_the_call():
    found = _reasons(_sin, [dict(x=torch.ones(2)), dict(x=torch.ones(3)), dict(x=torch.ones(1))])
    sym = [g for g in found if g.reason.startswith(f"2 <= {reason_name('x')}.size()[0]")]
    assert sym and sym[0].kind == "specialization" and sym[0].source == "L['x']" and sym[0].dim == 0 and sym[0].actual == 1


@pytest.mark.parametrize(
    "first, second, kind, expected, actual",
    [
        (torch.ones(4), torch.ones(4, dtype=torch.float64), "dtype", "Float", "Double"),
        (torch.ones(4), torch.ones(4, 2), "rank", 1, 2),
        (torch.ones(4, 6), torch.ones(6, 4).t(), "stride", 6, 1),
        (torch.ones(4), torch.ones(4, requires_grad=True), "requires_grad", False, True),
    ],
)
def test_tensor_property_guards(first, second, kind, expected, actual):
    (g,) = _reasons(_sin, [dict(x=first), dict(x=second)])
    assert (g.kind, g.source, g.expected, g.actual) == (kind, "L['x']", expected, actual)


def _scalars(x, a, flag, s):
    return x * a if flag else x * len(s)


def test_python_value_guards():
    base = dict(x=torch.ones(2), a=0.5, flag=True, s="ab")
    found = _reasons(_scalars, [base, {**base, "a": 1.5}])
    assert [(g.kind, g.source, g.expected, g.actual) for g in found] == [("value", "L['a']", 0.5, 1.5)]
    found = _reasons(_scalars, [base, {**base, "flag": False}])
    assert [(g.kind, g.source, g.expected, g.actual) for g in found] == [("value", "L['flag']", True, False)]


class _Layer:
    def __init__(self, ready: bool) -> None:
        self.is_initialized = ready


class _Layers:
    def __init__(self, ready: bool) -> None:
        self.layers = [_Layer(ready)]


def _reads_a_layer(x, cache):
    return x + 1 if cache.layers[0].is_initialized else x - 1


def test_a_value_guard_inside_an_object_argument_gets_its_actual_value_false_included():
    """A flag on a cache's layer, as ``DynamicCache`` holds ``is_initialized``: the path has an
    item in it (``layers[0]``), and the request's value is False. Before, such a failure kept
    ``actual`` None: a warm-up's uncovered guard read 'expected True' with nothing beside it."""
    x = torch.ones(2)
    found = _reasons(_reads_a_layer, [dict(x=x, cache=_Layers(True)), dict(x=x, cache=_Layers(False))])
    assert [(g.kind, g.source, g.expected, g.actual) for g in found] == [
        ("module_attribute", "L['cache'].layers[0].is_initialized", True, False)]


def _reads_global(x):
    return x + 1 if FLAG else x - 1


def test_global_guard():
    global FLAG
    compiled = torch.compile(_reads_global, backend="eager")
    capture = CaptureSession().install()
    compiled(torch.ones(2))
    FLAG = False
    try:
        compiled(torch.ones(2))
    finally:
        FLAG = True
        capture.poll()
        capture.uninstall()
    (g,) = [r for e in capture.records for r in e.guard_failures]
    assert (g.kind, g.source, g.expected) == ("global", "G['FLAG']", True)


def test_grad_mode_and_module_attribute_guards():
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = 2

        def forward(self, x):
            return x * self.scale if self.training else x

    m = M()
    compiled = torch.compile(m, backend="eager")
    capture = CaptureSession().install()
    compiled(torch.ones(2))
    m.eval()
    compiled(torch.ones(2))
    found = [r for e in capture.poll().compiles for r in e.guard_failures]
    capture.uninstall()
    assert [(g.kind, g.source, g.expected) for g in found] == [("module_attribute", "L['self'].training", True)]

    torch.compiler.reset()
    compiled = torch.compile(_sin, backend="eager")
    capture = CaptureSession().install()
    compiled(torch.ones(2))
    with torch.no_grad():
        compiled(torch.ones(2))
    (g,) = [r for e in capture.poll().compiles for r in e.guard_failures]
    capture.uninstall()
    assert g.kind == "grad_mode" and g.reason.startswith("GLOBAL_STATE changed: grad_mode")


def test_list_length_and_dict_keys():
    found = _reasons(lambda xs: sum(xs), [dict(xs=[torch.ones(2)] * 2), dict(xs=[torch.ones(2)] * 3)])
    assert [(g.kind, g.source, g.expected, g.actual) for g in found] == [("length", "L['xs']", 2, 3)]
    found = _reasons(lambda d: sum(d.values()), [dict(d={"a": torch.ones(2)}), dict(d={"b": torch.ones(2)})])
    assert [(g.kind, g.source, g.expected) for g in found] == [("dict_keys", "L['d']", "a")]


def test_unknown_text_is_kept_as_other():
    g = parse_guard_failure("0/3: ___check_obj_id(L['fn'], 1234)")
    assert g.kind == "other" and g.failed_entry == "0/3" and g.reason == "___check_obj_id(L['fn'], 1234)"


def test_split_reason_cuts_comment_and_stack():
    text = "0/0: a == 0.5     # def f(a): ...  # f.py:3 in f\nUser stack trace:\n  File ..."
    assert split_reason(text) == ("0/0", "a == 0.5")


def test_nested_module_attribute_source():
    g = parse_guard_failure("0/0: fn._modules['1'].training == True      # return F.dropout(...)  # dropout.py:73 in forward")
    assert (g.kind, g.source, g.expected) == ("module_attribute", "L['fn']._modules['1'].training", True)


def test_verbose_entry_split_keeps_comment_semicolons():
    from compilescope.torchtext import split_entry_reasons

    text = ("0/1: 2 <= x.size()[0]  # def f(x): ...  # f.py:3 in f (user code shown is first use of this value--the "
            "guard itself is not due user code but due to 0/1 specialization in the framework; to avoid "
            "specialization try torch._dynamo.decorators.mark_unbacked(tensor, dim)); n == 2  # f.py:4 in f")
    parts = split_entry_reasons(text)
    assert len(parts) == 2 and parts[1] == "0/1: n == 2  # f.py:4 in f"
    assert [parse_guard_failure(p).kind for p in parts] == ["specialization", "value"]


@pytest.mark.parametrize("text, kind, involves", [
    ("2 <= x.size()[0]", "specialization", ("L['x'] dim 0",)),
    ("4 <= x.size()[0] <= 64", "range", ("L['x'] dim 0",)),
    ("x.size()[0] == 16", "size", ("L['x'] dim 0",)),
    ("(x.size()[2] // 2) == ((1 + x.size()[2]) // 2)", "relation", ("L['x'] dim 2",)),
    ("3*x.size()[3]*x.size()[2] <= 20480", "relation", ("L['x'] dim 3", "L['x'] dim 2")),
    ("L['x'].size()[0] == L['y'].size()[0]", "relation", ("L['x'] dim 0", "L['y'] dim 0")),
])
def test_symbolic_guards_say_what_they_are(text, kind, involves):
    g = parse_guard_failure(f"0/0: {text}  # y = f(x)  # model.py:12 in forward")
    assert (g.kind, g.involves, g.user_line) == (kind, involves, "model.py:12 in forward")


def test_relations_are_never_advised_as_mark_dynamic():
    from compilescope.analysis.advice import group_causes
    from compilescope.model import CompileId, CompileRecord

    failures = tuple(parse_guard_failure(t) for t in (
        "0/0: (x.size()[2] // 2) == ((1 + x.size()[2]) // 2)", "0/1: 3*x.size()[3]*x.size()[2] <= 20480"))
    record = CompileRecord(CompileId(0, 2), "forward", "m.py", 1, guard_failures=failures)
    (cause,) = group_causes((record,))  # a function's relation guards are one cause
    assert cause.kind == "relation" and not cause.shape_reducible and "mark_dynamic(" not in cause.next_step
    assert cause.description.startswith("2 relation guard(s) over L['x'] dim 2, L['x'] dim 3: (x.size()[2] // 2)")
    assert "pad L['x'] dim 2, L['x'] dim 3 to a multiple of 2" in cause.next_step
    assert "size threshold" in cause.next_step


@pytest.mark.parametrize("text, source, dim", [
    ("tensor 'kwargs['input_ids']' size mismatch at index 1. expected 8, actual 16", "L['kwargs']['input_ids']", 1),
    ("tensor 'batch['ids'][0]' size mismatch at index 0. expected 2, actual 3", "L['batch']['ids'][0]", 0),
    ("tensor 'self.buf' size mismatch at index 0. expected 4, actual 5", "L['self'].buf", 0),
    ("tensor 'args[0]' stride mismatch at index 0. expected 3, actual 1", "L['args'][0]", 0),
])
def test_nested_and_keyword_sources_parse_to_source_and_dim(text, source, dim):
    g = parse_guard_failure(f"0/0: {text}")
    assert (g.source, g.dim, g.kind in ("size", "stride")) == (source, dim, True)


def test_a_module_driven_through_kwargs_is_named_by_its_parameters():
    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(100, 8)

        def forward(self, input_ids, attention_mask=None):
            return self.emb(input_ids) * attention_mask.unsqueeze(-1)

    from compilescope.collect.records import TargetInfo

    model = Encoder()
    compiled = torch.compile(model, backend="eager", dynamic=False)
    capture = CaptureSession().install()
    try:
        for seq in (8, 16):
            ids = torch.zeros(2, seq, dtype=torch.long)
            compiled(**{"input_ids": ids, "attention_mask": torch.ones(2, seq)})
        capture.poll(target=TargetInfo(model))
    finally:
        capture.uninstall()
    recompile = next(r for r in capture.records if r.is_recompile)
    assert recompile.display_name == "Encoder.forward"
    assert f"{reason_name('input_ids')}' size mismatch at index 1. expected 8, actual 16" in recompile.reasons[0]
    sources = {(g.source, g.dim) for g in recompile.guard_failures}
    assert ("L['input_ids']", 1) in sources and ("L['attention_mask']", 1) in sources  # the second found by the walk


@pytest.mark.parametrize("made_by, kind", [
    ("_dynamo/variables/builder.py:4960 in <lambda>", "range"),  # mark_dynamic(x, 0, min=, max=)
    ("_meta_registrations.py:2410 in meta_conv", "relation"),  # an op's shape function: a size threshold
    ("_dynamo/variables/tensor.py:2606 in evaluate_expr", "relation"),
])
def test_a_bounded_size_guard_is_a_range_only_when_mark_dynamic_made_it(made_by, kind):
    text = f"0/1: 6440 <= waveforms.size()[1] <= 12879  # h = self.conv(w)  # sep.py:12 in forward ({made_by})"
    g = parse_guard_failure(text)
    assert (g.kind, g.source, g.user_line) == (kind, "L['waveforms']", "sep.py:12 in forward")


def test_a_conv_threshold_is_never_advised_as_widening_mark_dynamic_bounds():
    from compilescope.analysis.advice import group_causes
    from compilescope.model import CompileId, CompileRecord

    text = ("6440 <= waveforms.size()[1] <= 12879  # h = self.conv(w)  # sep.py:12 in forward "
            "(_meta_registrations.py:2410 in meta_conv)")
    record = CompileRecord(CompileId(0, 1), "forward", "sep.py", 1, reasons=(text,),
                           guard_failures=(parse_guard_failure(text),))
    (cause,) = group_causes((record,))
    assert not cause.shape_reducible
    assert "widen" not in cause.next_step and "range given to mark_dynamic" not in cause.next_step
    assert "threshold" in cause.next_step and "sep.py:12 in forward" in cause.next_step
    assert "ceil_mode" not in cause.next_step  # no example that may not apply to this model


def test_a_walked_shape_relation_is_worded_as_pytorch_words_it():
    from types import SimpleNamespace

    from compilescope.torchtext import explain_checks

    walked = SimpleNamespace(failed=True, kind="EPILOGUE", value=None,
                             text="2 <= L['kwargs']['mask'].size()[0]  # if mask is not None:  # m.py:3 in forward")
    (g,), _ = explain_checks([walked], "0/1")
    pytorch = parse_guard_failure("0/2: 2 <= kwargs['mask'].size()[0]")
    assert (g.reason, g.source, g.kind) == (pytorch.reason, pytorch.source, pytorch.kind) == (
        "2 <= kwargs['mask'].size()[0]", "L['kwargs']['mask']", "specialization")


def test_a_capture_opened_inside_another_leaves_the_outer_one_its_reasons():
    """``compilescope probe`` of a program that opens a ``watch`` of its own: two captures at
    once. Before, the inner one's observing lists replaced the outer's, and the outer recorded
    every recompile with no reason ("first compile only" beside "2 recompile(s)")."""
    from torch._dynamo.utils import guard_failures

    torch.compiler.reset()
    factory = guard_failures.default_factory
    compiled = torch.compile(_sin, backend="eager")
    outer = CaptureSession().install()
    try:
        compiled(torch.ones(16))
        inner = CaptureSession().install()
        try:
            compiled(torch.ones(32))
            got_inner = inner.poll(call_index=1)
        finally:
            inner.uninstall()
        compiled(torch.ones(1))  # after the inner one ended too
        got = outer.poll(call_index=1)
    finally:
        outer.uninstall()
    reasons = [r for e in got.compiles for r in e.reasons]
    assert [e.is_recompile for e in got.compiles] == [False, True, True]
    assert any("expected 16, actual 32" in r for r in reasons), reasons
    assert any("actual 1" in r for r in reasons), reasons
    assert any("expected 16, actual 32" in r for e in got_inner.compiles for r in e.reasons)
    assert guard_failures.default_factory is factory  # PyTorch left as it was found
    assert all(type(v) is list for v in guard_failures.values())
