"""A request's failed guards on the console: the newest entry's in full, the older entries'
folded into one line (forecast and verify alike); the records keep every guard."""

from __future__ import annotations

from compilescope.render.verify import _request_lines
from compilescope.report.forecast import ForecastGuard, fold_guards
from compilescope.report.verify import VerifyRequest

GUARDS = (
    ForecastGuard("0/2", "tensor 'x' size mismatch at index 1. expected 8, actual 10", "size"),
    ForecastGuard("0/2", "tensor 'y' size mismatch at index 1. expected 8, actual 10", "size"),
    ForecastGuard("0/1", "tensor 'x' size mismatch at index 0. expected 4, actual 6", "size"),
    ForecastGuard("0/0", "tensor 'x' size mismatch at index 0. expected 2, actual 6", "size"),
    ForecastGuard("0/1", "tensor 'y' size mismatch at index 0. expected 4, actual 6", "size"),
)


def test_the_fold_keeps_the_entry_dynamo_tried_first_and_counts_the_rest():
    fold = fold_guards(GUARDS)
    assert fold.newest == GUARDS[:2]
    assert fold.older_entries == ("0/1", "0/0") and fold.older_guards == 3
    assert fold_guards(()).newest == () and fold_guards(()).older_entries == ()
    alone = fold_guards(GUARDS[:2])
    assert alone.older_entries == () and alone.older_guards == 0


def test_a_verified_request_shows_the_fold():
    r = VerifyRequest(3, (("n", 10),), "compile", ("0/3",), GUARDS, latency_s=0.5, what="compiles 0/3")
    lines = [t.plain for t in _request_lines(r)]
    assert lines[1] == "      0/2: tensor 'x' size mismatch at index 1. expected 8, actual 10  [size]"
    assert lines[2].startswith("      0/2: tensor 'y'")
    assert lines[3] == "      0/1, 0/0 refused it too: 3 more failed guard(s) (the JSON output lists each)"
    assert len(lines) == 4
