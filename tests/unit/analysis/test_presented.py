"""The values analysis derives for the renderers to print as they are: a shape's numerics
cell and its state (the console colours it, the page classes it, neither decides)."""

from __future__ import annotations

import pytest

from compilescope.analysis.presented import shape_numerics
from compilescope.model import NumericsCheck


def _check(err: float | None, passed: bool = True, ran_eagerly: bool | None = False,
           comparable: bool = True) -> NumericsCheck:
    return NumericsCheck({"n": 8}, "float32", err, err, 1e-5, 1e-5, passed, ran_eagerly=ran_eagerly,
                         comparable=comparable)


@pytest.mark.parametrize("check, cell", [
    (None, ("—", "")),
    (_check(1.5e-7), ("1.5e-07", "pass")),
    (_check(None), ("ok", "pass")),
    (_check(3e-2, passed=False), ("FAIL 3.0e-02", "fail")),
    (_check(None, passed=False), ("FAIL", "fail")),
    (_check(3e-2, passed=False, ran_eagerly=True), ("eager: not counted", "not counted")),
    (_check(3e-2, passed=False, comparable=False), ("n/a: eager varies", "not counted")),
])
def test_a_shapes_numerics_cell_says_what_the_check_found(check, cell):
    assert shape_numerics(check) == cell


def test_guard_group_savings_that_overlap_are_not_presented_as_adding_up():
    """Each group's time is the lookup without that group alone; groups share parts of the guard
    tree, so their savings can sum past the whole (37% + 37% + 34%): the words say so."""
    from compilescope.analysis.guards import _top_text
    from compilescope.report.guards import GuardSourceRow

    def row(owner, share):
        return GuardSourceRow("module", owner, 1, 100, (), 0.3, None if share is None else share * 1e-5, share,
                              label=owner)

    overlapping = _top_text([row("self.a", 0.37), row("self.b", 0.37), row("self.c", 0.34)])
    assert overlapping.startswith("module self.a: 100 guards (30%), the lookup 37% shorter without them;")
    assert overlapping.endswith("so the savings overlap and do not add up)")
    assert "overlap" not in _top_text([row("self.a", 0.5), row("self.b", 0.2), row("self.c", None)])
