"""A decorator's frame names its inputs by the decorator's own ``*a``/``**kw``: the records
read them as the decorated function's parameters, whatever the decorator calls them."""

from __future__ import annotations

from compilescope.analysis.build import build_probe_report
from compilescope.collect.records import packed_names, rename_source
from compilescope.probe.capture import probe_script
from compilescope.render.probe import render

DECORATOR = """\
import functools, torch

def deco(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        return fn(*a, **kw)
    return wrapper
"""

SCRIPT = DECORATOR + """
@deco
def f(x):
    return x.sin()

g = torch.compile(f, backend="eager", dynamic=False)
for n in (2, 3):
    g(torch.randn(n))
"""


def test_the_names_a_function_gives_its_packed_arguments():
    def plain(x, y=1):
        return x

    def wrapper(self, *a, k=0, **kw):
        return a

    def only_kwargs(**options):
        return options

    assert packed_names(plain) == ("args", "kwargs")
    assert packed_names(wrapper) == ("a", "kw")
    assert packed_names(only_kwargs) == ("args", "options")
    assert packed_names(len) == ("args", "kwargs")  # no code: PyTorch's usual names
    assert rename_source("L['a'][0]", ("x",), ("a", "kw")) == "L['x']"
    assert rename_source("L['kw']['x'].size()", ("x",), ("a", "kw")) == "L['x'].size()"
    assert rename_source("L['a'][0]", ("x",)) == "L['a'][0]"  # not this wrapper's: left as it is
    assert rename_source("L['args'][1]", ("x",)) == "L['args'][1]"  # past the parameters
    assert rename_source("L['args'][0]", ("x",), None) == "L['args'][0]"  # the function's own frame


def test_a_functions_own_star_args_are_its_own():
    # an undecorated f(x, *rest, **opts): Dynamo's L['rest'][0] is rest's first item, not x
    from compilescope.collect.records import TargetInfo, code_key

    def f(x, *rest, **opts):
        return x

    info = TargetInfo(f)
    assert info.target.packed is None and info.packed(code_key(f.__code__)) is None


def test_a_decorators_a_and_kw_are_the_functions_parameters_in_the_probe(tmp_path):
    script = tmp_path / "decorated.py"
    script.write_text(SCRIPT)
    result = probe_script(str(script), [])
    assert result.exit_code == 0 and result.error is None
    assert [str(c.compile_id) for c in result.compiles] == ["0/0", "0/1"]
    assert {g.source for c in result.compiles for g in c.guard_failures} == {"L['x']"}
    assert all(e.source != "L['a'][0]" for c in result.compiles for e in c.entry_guards)
    text = render(build_probe_report(result))
    # the input the caller passes, marked by its name; dynamic_sources as the frame names it
    assert "torch._dynamo.mark_dynamic(x, 0)" in text
    assert "dynamic_sources=\"L['a'][0]:0\"" in text
    assert "a tensor the program computes" not in text


def test_dynamic_sources_reach_a_decorators_a_and_kw():
    # run's dynamic_sources strategy adds each input's name as such a decorator's frame names it
    import functools

    from compilescope.collect.records import TargetInfo
    from compilescope.strategies import through_wrapper, wraps_variadic

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*a, **kw):
            return fn(*a, **kw)
        return wrapper

    @deco
    def f(x, ids=None):
        return x

    info = TargetInfo(f).target
    assert wraps_variadic(f) and (info.params, info.packed) == (("x", "ids"), ("a", "kw"))
    assert through_wrapper("L['x']:0,L['ids']:1", info.params, info.packed).split(",") == [
        "L['x']:0", "L['ids']:1", "L['kw']['x']:0", "L['a'][0]:0", "L['kw']['ids']:1", "L['a'][1]:1"]

    @deco
    def g(a, b):  # a parameter named as the decorator's *a is a parameter all the same
        return a

    info = TargetInfo(g).target
    assert through_wrapper("L['a']:0", info.params, info.packed).split(",") == [
        "L['a']:0", "L['kw']['a']:0", "L['a'][0]:0"]


def test_the_shapes_spec_snippet_keys_a_decorators_a_and_kw_as_its_slots():
    from compilescope.analysis.advise import _shapes_spec_snippet, _usual_words
    from compilescope.options import StrategyOptions

    assert _usual_words("L['a'][0]", ("a", "kw")) == "L['args'][0]"
    assert _usual_words("L['kw']['ids']", ("a", "kw")) == "L['kwargs']['ids']"
    assert _usual_words("L['x']", ("a", "kw")) == "L['x']"
    assert _usual_words("L['a'][0]", None) == "L['a'][0]"
    roots = {"x": _usual_words("L['a'][0]", ("a", "kw"))}
    snippet = _shapes_spec_snippet([("x", 0)], {"x": 1}, StrategyOptions(), roots)
    assert "'*args': [TensorSpec([ShapeVar('x_0', min=0)])]" in snippet.setup


def test_calls_passing_the_input_by_position_and_by_keyword(tmp_path):
    # the wrapper's frame names the input L['a'][0] in one call and L['kw']['x'] in the next:
    # one size cause with both names in its dynamic_sources, and the packing itself (how many
    # positional arguments, whether any keyword) a cause of its own that no shape setting removes
    script = tmp_path / "both_ways.py"
    script.write_text(SCRIPT + "for n in (4, 5):\n    g(x=torch.randn(n))\n")
    report = build_probe_report(probe_script(str(script), []))
    (fn,) = report.functions
    (size,) = [c for c in fn.causes if c.kind == "size"]
    assert size.source == "L['x']" and size.frame_sources == ("L['a'][0]", "L['kw']['x']")
    assert "dynamic_sources=\"L['a'][0]:0,L['kw']['x']:0\"" in size.next_step
    packing = [c for c in fn.causes if c.kind != "size"]
    assert packing and all(not c.shape_reducible and "pass them the same way at every call" in c.next_step
                           for c in packing)


PAIR = DECORATOR + """
@deco
def f(x, y):
    return x + y

g = torch.compile(f, backend="eager")
for n in (2, 3, 4):
    g(x=torch.randn(n), y=torch.randn(n))
"""


def test_sizes_that_change_together_are_marked_together_each_by_its_frame_name(tmp_path):
    # automatic dynamic shapes compiled both dims dynamic at 0/1: either mark alone would leave
    # x + y specialising the other, so the step's setting names both, as the wrapper's frame does
    script = tmp_path / "pair.py"
    script.write_text(PAIR)
    report = build_probe_report(probe_script(str(script), []))
    (fn,) = report.functions
    x = next(c for c in fn.causes if c.source == "L['x']")
    assert "marked from the first call on, together with L['y'] dim 0" in x.next_step
    assert "dynamic_sources=\"L['kw']['x']:0,L['kw']['y']:0\" marks them all" in x.next_step
