"""pytest plugin (registered by the ``pytest11`` entry point ``compilescope``).

* ``@pytest.mark.max_recompiles(n)`` / ``@pytest.mark.max_graph_breaks(n)``: the test fails
  with :class:`compilescope.RecompileBudgetExceeded` when its call phase recompiles (or
  graph-breaks) more, the message giving each reason in PyTorch's words and what removes it;
* the ``compile_watch`` fixture: the :class:`compilescope.Watch` active for the test, to
  assert on (``compile_watch.recompiles``, ``.causes``…);
* ``--compilescope-report``: a table of compiles, recompiles, graph breaks and causes per test
  at the end of the run.

Capture is installed only around tests that use one of these, so other tests run untouched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .watch import Watch

# The plugin loads in every pytest session of an environment where compilescope is installed:
# it imports torch (through ``watch``) only for a test that uses a budget, the fixture or the report.
_WATCH = pytest.StashKey["Watch"]()
_ROWS = pytest.StashKey[list[tuple[str, int, int, int, str]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("compilescope")
    group.addoption("--compilescope-report", action="store_true", default=False,
                    help="print compiles, recompiles, graph breaks and their causes per test at the end")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "max_recompiles(n): fail the test when it recompiles more than n times")
    config.addinivalue_line("markers", "max_graph_breaks(n): fail the test when it has more than n distinct graph breaks")
    config.stash[_ROWS] = []
    config.pluginmanager.register(_Rows(config), "compilescope-rows")


_ROW = pytest.StashKey[tuple[str, int, int, int, str]]()
_ATTRIBUTE = "compilescope_row"  # the row a watched test's teardown report carries (to the controller under xdist)


class _Rows:
    """Collects each watched test's row from its teardown report: in this process, or, under
    pytest-xdist, in the controller that receives the workers' reports (a report's own
    attributes travel with it; a user property would also land in JUnit XML)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        row = getattr(report, _ATTRIBUTE, None) if report.when == "teardown" else None
        if row is not None:
            self.config.stash[_ROWS].append(tuple(row))  # type: ignore[arg-type]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    report = yield
    row = item.stash.get(_ROW, None) if call.when == "teardown" else None
    if row is not None:
        setattr(report, _ATTRIBUTE, list(row))
    return report


def _budget(item: pytest.Item, name: str) -> int | None:
    marker = item.get_closest_marker(name)
    if marker is None:
        return None
    extra = sorted(set(marker.kwargs) - {"n"})
    if len(marker.args) + ("n" in marker.kwargs) != 1 or extra:
        given = [repr(a) for a in marker.args] + [f"{k}={v!r}" for k, v in marker.kwargs.items()]
        raise pytest.UsageError(f"@pytest.mark.{name} takes one non-negative integer (n), got "
                                f"({', '.join(given)}) ({item.nodeid})")
    value = marker.args[0] if marker.args else marker.kwargs["n"]
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise pytest.UsageError(f"@pytest.mark.{name} takes a non-negative integer, got {value!r} ({item.nodeid})")
    return value


@pytest.fixture
def compile_watch(request: pytest.FixtureRequest) -> Any:
    """The watch that counts this test's compiles (budgets come from the markers)."""
    from .watch import Watch

    item = request.node
    watch = Watch(_budget(item, "max_recompiles"), _budget(item, "max_graph_breaks"))
    item.stash[_WATCH] = watch
    with_scope = watch.__enter__()
    try:
        yield with_scope
    finally:
        watch.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    recompiles, breaks = _budget(item, "max_recompiles"), _budget(item, "max_graph_breaks")
    reporting = item.config.getoption("--compilescope-report")
    own = None
    if _WATCH not in item.stash and (recompiles is not None or breaks is not None or reporting):
        from .watch import Watch

        own = Watch(recompiles, breaks)
        item.stash[_WATCH] = own
        own.__enter__()
    try:
        result = yield
    finally:
        if own is not None:
            own.stop()
    watch = item.stash.get(_WATCH, None)
    if watch is not None:
        watch.check()  # over budget: the test fails with the reasons
    return result


def pytest_runtest_teardown(item: pytest.Item) -> None:
    watch = item.stash.get(_WATCH, None)
    if watch is None or not item.config.getoption("--compilescope-report"):
        return
    causes = "; ".join(c.description for c in watch.causes)
    item.stash[_ROW] = (item.nodeid, watch.compiles, watch.recompiles, watch.graph_breaks, causes)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if not config.getoption("--compilescope-report"):
        return
    rows = config.stash[_ROWS]
    terminalreporter.section("compilescope: compiles per test")
    if not rows:
        terminalreporter.write_line("no test ran under a compile watch")
        return
    width = max(len(r[0]) for r in rows)
    terminalreporter.write_line(f"{'test':<{width}}  compiles  recompiles  graph breaks  causes")
    for nodeid, compiles, recompiles, breaks, causes in rows:
        terminalreporter.write_line(f"{nodeid:<{width}}  {compiles:>8}  {recompiles:>10}  {breaks:>12}  {causes}")
