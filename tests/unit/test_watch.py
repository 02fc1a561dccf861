"""compilescope.watch and the pytest plugin, on real torch.compile (eager backend)."""

from __future__ import annotations

import threading
import warnings

import pytest
import torch

import compilescope
from compilescope import RecompileBudgetExceeded, RecompileBudgetWarning
from compilescope.compat import reason_name

pytestmark = pytest.mark.compat("watch, pytest plugin")


def sincos(x):
    return x.sin() + x.cos()


def _pytorch_state():
    from torch._dynamo import guards, utils

    return (type(utils.guard_failures.default_factory), utils.guard_failures.default_factory,
            type(utils._compilation_metrics), utils._compilation_metrics.maxlen, guards.is_recompiles_verbose_enabled,
            torch._dynamo.reset)


def test_counts_reasons_and_what_removes_them():
    f = torch.compile(sincos, backend="eager", dynamic=False)
    with pytest.raises(RecompileBudgetExceeded) as info:
        with compilescope.watch(max_recompiles=1) as w:
            for n in (8, 16, 32):
                f(torch.randn(n))
    assert (w.compiles, w.recompiles, w.refused) == (3, 2, 0)
    message = str(info.value)
    assert "2 recompile(s) exceed the budget of 1" in message
    assert f"0/0: tensor '{reason_name('x')}' size mismatch at index 0. expected 8, actual 16" in message
    assert f"0/1: tensor '{reason_name('x')}' size mismatch at index 0. expected 16, actual 32" in message
    assert "shape-reducible" in message and "mark_dynamic(x, 0);" in message
    (cause,) = w.causes
    assert (cause.source, cause.kind, cause.dim) == ("L['x']", "size", 0)


def test_within_budget_and_a_steady_scope_counts_nothing():
    f = torch.compile(sincos, backend="eager", dynamic=False)
    with compilescope.watch(max_recompiles=2) as w:
        for n in (8, 16, 32):
            f(torch.randn(n))
    assert w.recompiles == 2
    with compilescope.watch(max_recompiles=0) as steady:
        for n in (8, 16, 32, 8):
            f(torch.randn(n))
    assert (steady.compiles, steady.recompiles) == (0, 0)


def test_pytorch_is_left_exactly_as_found():
    before = _pytorch_state()
    f = torch.compile(sincos, backend="eager", dynamic=False)
    with compilescope.watch():
        with compilescope.watch():
            f(torch.randn(4))
            f(torch.randn(5))
    assert _pytorch_state() == before
    assert all(type(v) is list for v in torch._dynamo.utils.guard_failures.values())



def test_a_watch_inside_a_probed_program_leaves_the_probes_observer_in_place():
    """Both a probe and a ``watch`` in the program it runs observe the compilation metrics as
    each compile ends (a failure's fullgraph-ness is read then): one deque observing for both.
    Before, the watch swapped in a deque of its own and, on leaving, a plain one — the probe
    saw no compile end from then on."""
    from compilescope import compat

    seen: list[str] = []
    undo = compat.observe_compilation_metrics(lambda e: seen.append("probe"))
    try:
        f = torch.compile(sincos, backend="eager", dynamic=False)
        with compilescope.watch():
            f(torch.randn(4))
        f(torch.randn(5))
        assert seen == ["probe", "probe"]
    finally:
        undo()
    import collections

    assert type(torch._dynamo.utils._compilation_metrics) is collections.deque  # the last undo: a plain one again


def test_watches_nest_and_keep_to_their_thread():
    f = torch.compile(sincos, backend="eager", dynamic=False)
    g = torch.compile(lambda x: x * 3, backend="eager", dynamic=False)
    counts = {}

    def worker():
        with compilescope.watch() as w:
            for n in (3, 5, 7):
                g(torch.randn(n))
        counts["thread"] = (w.compiles, w.recompiles)

    with compilescope.watch() as outer:
        f(torch.randn(8))
        with compilescope.watch() as inner:
            f(torch.randn(16))
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert (outer.compiles, outer.recompiles) == (2, 1)
    assert (inner.compiles, inner.recompiles) == (1, 1)
    assert counts["thread"] == (3, 2)


def test_functions_filter_decorator_callback_and_warn():
    lin = torch.nn.Linear(4, 4)
    watched = torch.compile(lin, backend="eager", dynamic=False)
    other = torch.compile(torch.nn.Linear(4, 4), backend="eager", dynamic=False)
    seen = []
    with compilescope.watch(functions=[lin], on_recompile=seen.append) as w:
        watched(torch.randn(2, 4))
        watched(torch.randn(3, 4))
        other(torch.randn(5, 4))
    assert (w.compiles, w.recompiles) == (2, 1)
    assert [str(r.compile_id) for r in seen] == ["0/1"] and seen[0].reasons

    f = torch.compile(sincos, backend="eager", dynamic=False)

    @compilescope.watch(max_recompiles=0, action="warn")
    def serve(n):
        return f(torch.randn(n))

    serve(4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        serve(6)
    assert any(issubclass(c.category, RecompileBudgetWarning) and "expected 4, actual 6" in str(c.message)
               for c in caught)


def test_a_failed_compile_is_said_within_budget_and_in_the_explanation():
    # a module that never compiles has no recompile to exceed a budget: it is said all the same
    lstm = torch.compile(torch.nn.LSTM(4, 4), backend="eager")
    with pytest.warns(RuntimeWarning, match=r"compile 0/0 of LSTM.forward .* failed \(Unsupported.*\): Dynamo ran the "
                                            r"frame eagerly; no later attempt of it is on record"):
        with compilescope.watch(max_recompiles=0) as w:
            lstm(torch.randn(3, 1, 4))
            lstm(torch.randn(3, 1, 4))
    assert w.failed == 1 and w.recompiles == 0
    assert "(1 compile(s), 0 recompile(s), 1 failed," in w.explain()
    # its graph break is the module's, where its compile record places it — not PyTorch's wrapper
    # around a compiled module (external_utils.py), the only frame in the break's own stack
    (record,) = w.records
    assert [(b.filename, b.line) for b in w.breaks] == [(record.target.filename, record.target.line)]
    assert record.target.filename.endswith("rnn.py") and "external_utils" in record.filename


def test_a_fullgraph_failure_raises_into_the_call_and_its_retry_is_no_recompile():
    # under fullgraph=True a failed compile raises into the call, leaves no cache entry, and the
    # next call tries the frame again (attempt 0/1): a compile, not a recompile, as PyTorch counts
    # (the frame held no entry); the watch says the error reached the call and where it failed
    def f(x):
        y = x * 2
        print("unsupported under fullgraph")  # noqa: T201 — the break is the point
        return y + 1

    g = torch.compile(f, backend="eager", fullgraph=True)
    line = f.__code__.co_firstlineno + 2
    with pytest.warns(RuntimeWarning) as caught, compilescope.watch(max_recompiles=0) as w:
        for n in (2, 3):
            with pytest.raises(Exception, match="builtin operator"):
                g(torch.ones(n))
    assert [str(r.compile_id) for r in w.records] == ["0/0", "0/1"]
    assert [(r.failed, r.is_recompile, r.entries_before, r.reached_call) for r in w.records] == [(True, False, 0, True)] * 2
    assert {r.fail_at for r in w.records} == {(__file__, line)}
    assert (w.compiles, w.recompiles, w.failed) == (2, 0, 2)
    text = w.explain()
    assert f"failed at {__file__}:{line} (Unsupported" in text and "the error raised into the call" in text
    assert "eagerly" not in text
    assert any("the error raised into the call" in str(c.message) for c in caught)

    # fullgraph=False under torch._dynamo.error_on_graph_break(True): the failure raises all the same
    if hasattr(torch._dynamo, "error_on_graph_break"):
        torch._dynamo.reset()
        plain = torch.compile(f, backend="eager")
        with pytest.warns(RuntimeWarning), compilescope.watch() as w3, torch._dynamo.error_on_graph_break(True):
            with pytest.raises(Exception, match="builtin operator"):
                plain(torch.ones(2))
        assert [(r.failed, r.reached_call) for r in w3.records] == [(True, True)]

    # the same frame compiled without fullgraph: its graph break is handled, and a new size
    # recompiles a frame that holds an entry
    h = torch.compile(lambda x: x.cos(), backend="eager", dynamic=False)
    with compilescope.watch() as w2:
        h(torch.ones(2))
        h(torch.ones(3))
    assert [(r.entries_before, r.is_recompile) for r in w2.records] == [(0, False), (1, True)]


def test_a_data_dependent_branch_is_named_as_the_trace_names_it():
    # in process PyTorch records the jump's instruction ("generic_jump TensorVariable()"); its
    # logged text, the trace's, opens with the kind: "Data-dependent branching"
    def f(x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    g = torch.compile(f, backend="eager")
    with pytest.warns(RecompileBudgetWarning), compilescope.watch(max_graph_breaks=0, action="warn") as w:
        g(torch.ones(3))
    (b,) = w.breaks
    assert b.reason.split("\n") == ["Data-dependent branching", "  generic_jump TensorVariable()"]
    assert (b.filename, b.line) == (__file__, f.__code__.co_firstlineno + 1)
    assert f"graph break at {__file__}:{b.line}: Data-dependent branching" in w.explain()


def test_a_refused_attempt_is_no_compile_of_its_cause():
    f = torch.compile(lambda x: x.sin(), backend="eager", dynamic=False)
    torch._dynamo.reset()
    with pytest.warns(RuntimeWarning, match="refused"), torch._dynamo.config.patch(recompile_limit=2), \
            compilescope.watch() as w:
        for n in (4, 8, 16):
            f(torch.randn(n))
    (cause,) = w.causes
    assert cause.description.endswith("→ 1 compile(s), then 1 refused by the recompile limit (that call ran eagerly, "
                                      "as does every later call no entry accepts: Dynamo records none of those)")
    assert "1 refused by the recompile limit" in w.explain().splitlines()[0]


def test_a_refusal_within_budget_is_said_with_what_it_leaves_running_eagerly():
    # the limit refused 0/2 (size 16): Dynamo then runs only the frame's cached graphs, so the
    # next new size (32) ran eagerly with no attempt, and nothing of it is on record
    f = torch.compile(lambda x: x.sin(), backend="eager", dynamic=False)
    torch._dynamo.reset()
    with pytest.warns(RuntimeWarning) as caught, torch._dynamo.config.patch(recompile_limit=2), \
            compilescope.watch(max_recompiles=5) as w:
        for n in (4, 8, 16, 32, 4):
            f(torch.randn(n))
    assert (w.compiles, w.recompiles, w.refused) == (2, 1, 1) and not w.over_budget()
    (said,) = [str(c.message) for c in caught if "refused" in str(c.message)]
    assert "0/2 <lambda>" in said and "refused by the recompile limit (the call ran eagerly; Dynamo runs only " \
        "this frame's cached graphs from then on" in said


def test_graph_break_budget():
    def broken(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    f = torch.compile(broken, backend="eager")
    with pytest.raises(RecompileBudgetExceeded, match="1 distinct graph break"):
        with compilescope.watch(max_graph_breaks=0):
            f(torch.randn(4))


PLUGIN_TEST = """
import pytest
import torch


def sincos(x):
    return x.sin() + x.cos()


@pytest.mark.max_recompiles({budget})
def test_three_sizes():
    f = torch.compile(sincos, backend="eager", dynamic=False)
    for n in (8, 16, 32):
        f(torch.randn(n))
"""


@pytest.mark.parametrize("budget, outcome", [(1, "failed"), (2, "passed")])
def test_plugin_marker(pytester_compiled, budget, outcome):
    pytester = pytester_compiled
    # pytest in this process (torch already imported), the plugin loaded by its entry point
    pytester.makepyfile(PLUGIN_TEST.format(budget=budget))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        x = reason_name("x").replace("[", "[[]")  # a glob's brackets
        result.stdout.fnmatch_lines([
            "*RecompileBudgetExceeded*2 recompile(s) exceed the budget of 1*",
            f"*0/0: tensor '{x}' size mismatch at index 0. expected 8, actual 16*",
            f"*0/1: tensor '{x}' size mismatch at index 0. expected 16, actual 32*",
        ])


def test_plugin_fixture_and_report(pytester_compiled):
    pytester = pytester_compiled
    pytester.makepyfile("""
        import torch

        def test_uses_fixture(compile_watch):
            f = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
            f(torch.ones(2))
            f(torch.ones(3))
            assert (compile_watch.compiles, compile_watch.recompiles) == (2, 1)
            assert compile_watch.causes[0].source == "L['x']"

        def test_plain():
            assert True
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--compilescope-report")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*compilescope: compiles per test*",
        "*test_uses_fixture*2*1*0*dim 0 varied over 2, 3*",
        "*test_plain*0*0*0*",
    ])


@pytest.mark.processes
def test_the_plugin_report_gathers_the_rows_of_xdist_workers(pytester):
    """Under pytest-xdist the tests run in workers: their rows reach the controller's report
    (before, it said no test ran under a compile watch)."""
    pytest.importorskip("xdist")
    pytester.makepyfile("""
        import torch

        def test_recompiles(compile_watch):
            f = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
            f(torch.ones(2))
            f(torch.ones(3))

        def test_plain():
            assert True
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--compilescope-report",
                                           "--junitxml=j.xml")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*compilescope: compiles per test*", "*test_recompiles*2*1*0*dim 0 varied over 2, 3*"])
    result.stdout.no_fnmatch_line("*no test ran under a compile watch*")
    assert "compilescope" not in (pytester.path / "j.xml").read_text()  # the rows are no test's JUnit property


@pytest.mark.processes
def test_the_plugin_imports_torch_only_for_a_test_that_uses_it(pytester):
    # a pytest of its own (a fresh interpreter), the plugin loaded by its entry point: a session
    # whose tests use no budget, fixture or report never imports torch
    pytester.makepyfile("""
        import sys

        def test_plain():
            assert "compilescope.pytest_plugin" in sys.modules and "torch" not in sys.modules
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("dynamic", [None, False])
def test_each_compile_records_whether_a_changed_size_was_compiled_dynamic(dynamic):
    """A compile record says whether Dynamo's settings at that compile made a dim dynamic once
    its size had changed (automatic dynamic shapes, read from the compile's own metrics): on by
    default, off under ``torch.compile(dynamic=False)`` — the evidence probe reads a
    mark-dynamic fix from (tests/e2e/test_edges_causes.py)."""
    f = torch.compile(sincos, backend="eager", dynamic=dynamic)
    with compilescope.watch() as w:
        for n in (8, 16, 32):
            f(torch.randn(n))
    assert [r.automatic_dynamic for r in w.records] == ([True, True] if dynamic is None else [False] * 3)
    dims = [next(g.sizes for g in r.entry_guards if g.kind == "tensor") for r in w.records]
    assert dims == ([(8,), (None,)] if dynamic is None else [(8,), (16,), (32,)])


def test_a_compiles_settings_are_read_whole_or_not_at_all():
    from compilescope.compat import automatic_dynamic

    assert automatic_dynamic('{"automatic_dynamic_shapes": true, "assume_static_by_default": true}') is True
    assert automatic_dynamic({"automatic_dynamic_shapes": False, "assume_static_by_default": False}) is True
    assert automatic_dynamic({"automatic_dynamic_shapes": False, "assume_static_by_default": True}) is False
    for broken in (None, "", "{", "[]", '{"automatic_dynamic_shapes": 1, "assume_static_by_default": true}',
                   {"automatic_dynamic_shapes": True}):
        assert automatic_dynamic(broken) is None


def test_the_break_count_says_it_counts_distinct_breaks_and_how_often_they_were_met():
    # the budget counts a break once however often its site is met (a recompile meets it again);
    # probe's header counts occurrences: the words say which count this is
    def step(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return y + 1

    f = torch.compile(step, backend="eager", dynamic=False)
    with pytest.warns(compilescope.RecompileBudgetWarning) as caught:
        with compilescope.watch(max_graph_breaks=0, action="warn") as w:
            for n in (2, 3, 4):
                f(torch.randn(n))
    assert (w.graph_breaks, len(w.breaks)) == (1, 3)
    first = str(caught[0].message).splitlines()[0]
    assert first.startswith("compilescope.watch: 1 distinct graph break(s) exceed the budget of 0 ")
    assert first.endswith(", 1 distinct graph break(s) met 3 times)")


def test_two_observers_of_compiled_calls_both_see_every_call():
    """A shape recording and the probe's settings (or two recordings) observe compiled calls
    at once. Before, the second wrapper saw the first as its caller, not the compiled
    function's wrapper, and its observer never ran."""
    from compilescope import compat
    from torch._dynamo import eval_frame

    before = eval_frame._callback_from_stance
    seen: list[str] = []
    undo_a = compat.observe_compiled_calls(lambda frame: seen.append("a"))
    undo_b = compat.observe_compiled_calls(lambda frame: seen.append("b"))
    f = torch.compile(sincos, backend="eager")
    try:
        f(torch.randn(3))
        undo_a()
        f(torch.randn(3))
    finally:
        undo_a()
        undo_b()
    assert seen == ["a", "b", "b"]
    assert eval_frame._callback_from_stance is before
