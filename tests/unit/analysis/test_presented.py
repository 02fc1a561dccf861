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
