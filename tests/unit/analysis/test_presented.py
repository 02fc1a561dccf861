"""The values analysis derives for the renderers to print as they are: a shape's numerics
cell and its state (the console colours it, the page classes it, neither decides)."""

from __future__ import annotations

from dataclasses import replace

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
    (replace(_check(None, passed=False, comparable=False), unjudged="eager raised"), ("n/a: eager raised", "not counted")),
    (replace(_check(0.0), uncompared=107), ("0.0e+00 (107 part(s) not compared)", "pass")),
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


def test_guard_sources_cover_every_frame_a_call_enters_and_share_its_whole_count():
    """A call through a graph break enters two frames (40 + 53 guards): the sources are both
    frames', and a source's count share is of the 93 the shape's row shows — before, frame 0's
    alone ('module self.c1: 15 guards (38%)' beside 'guards: 93')."""
    from compilescope.analysis.guards import source_rows
    from compilescope.model import FrameGuards, GuardGroup

    base = (10e-6,) * 9
    first = FrameGuards("forward", 0, 1, guards=40, copy_s=base, groups=(
        GuardGroup("module", "self.c1", 1, {"TYPE_MATCH": 15}, (6e-6,) * 9),
        GuardGroup("input", "x", 1, {"TENSOR_MATCH": 25}, (9.9e-6,) * 9)))
    second = FrameGuards("resume", 1, 1, guards=53, copy_s=base, groups=(
        GuardGroup("module", "self.c2", 1, {"TYPE_MATCH": 38}, (8e-6,) * 9),
        GuardGroup("module", "self.c1", 1, {"ID_MATCH": 15}, (10e-6,) * 9)))
    rows = {r.owner: r for r in source_rows([first, second])}
    assert sum(r.guards for r in rows.values()) == 93
    c1 = rows["self.c1"]  # one row for the source both frames guard
    assert c1.guards == 30 and c1.count_share == pytest.approx(30 / 93)
    assert c1.time_s == pytest.approx(4e-6) and c1.share == pytest.approx(4e-6 / 20e-6)
    assert rows["self.c2"].share == pytest.approx(2e-6 / 20e-6)
    assert dict(c1.kinds) == {"TYPE_MATCH": 15, "ID_MATCH": 15}
    # a resume frame's inputs are its own, named with it
    third = FrameGuards("resume", 1, 1, guards=5, copy_s=base, groups=(GuardGroup("input", "x", 1, {"TENSOR_MATCH": 5}),))
    owners = {(r.category, r.owner) for r in source_rows([first, third])}
    assert ("input", "x") in owners and ("input", "x of resume") in owners


def test_the_guard_checks_a_streams_order_adds_are_said_per_request_that_hit_with_how_many_hit():
    """The figure is a mean over the stream's hits (the compiling requests pay a compile
    instead): one hit of eight requests is said as one, not spread as 'a request'."""
    from types import SimpleNamespace

    from compilescope.analysis.verdict import guard_clauses

    g = SimpleNamespace(share=None, repeated_s=14.8e-6, significant=True, extra_s=69.5e-6, mean_tried=6.0, requests=1)
    assert guard_clauses(SimpleNamespace(guards=g)) == [
        "recompiles also slowed later calls: on this stream's order a request that hit tried 6.0 cache entries on "
        "average, +69.5 µs of guard checks a request (over the 1 hit(s) of the stream whose lookups were timed)"]


def test_a_guard_that_failed_on_several_entries_is_shown_with_the_newest_and_the_others_expectations():
    """'(the same guard on 5 older cache entries)' beside one entry's 'expected 10' read as if
    every entry expected 10; and which entry's text was shown hung on the order recorded."""
    from compilescope.analysis.build import grouped_reasons
    from compilescope.torchtext import parse_guard_failure

    found = [parse_guard_failure(f"0/{i}: tensor 'x' size mismatch at index 0. expected {size}, actual 6")
             for i, size in ((1, 4), (3, 10), (2, 8), (0, 2))]
    found.append(parse_guard_failure("0/2: GLOBAL_STATE changed: grad_mode "))
    found.append(parse_guard_failure("0/0: GLOBAL_STATE changed: grad_mode "))
    shown = grouped_reasons(found)
    assert shown[0] == ("tensor 'x' size mismatch at index 0. expected 10, actual 6 (it failed on 3 older cache "
                        "entries too, which expected 8, 4, 2)")
    again = [parse_guard_failure(f"0/{i}: tensor 'x' size mismatch at index 0. expected {size}, actual 2")
             for i, size in ((3, 8), (2, 8), (1, 4))]
    assert grouped_reasons(again) == ("tensor 'x' size mismatch at index 0. expected 8, actual 2 (it failed on 2 older "
                                      "cache entries too, which expected 8, 4)",)
    # entries of another frame are not "older": each frame's failures are their own line
    frames = [parse_guard_failure("1/0: tensor 'x' size mismatch at index 0. expected 5, actual 2"), *again]
    assert grouped_reasons(frames)[0] == "tensor 'x' size mismatch at index 0. expected 5, actual 2"
    assert shown[1].endswith("(the same guard on 1 older cache entry)")


def test_a_soundness_check_that_told_nothing_names_the_change_it_made():
    """'UNKNOWN not told: RuntimeError: Given groups=2, weight of size …' read as a bug in the
    user's model: the change that raised (model.c2.groups = 2) is part of the finding."""
    from compilescope.analysis.guards import soundness_row
    from compilescope.model import SoundnessCheck

    row = soundness_row(SoundnessCheck("model.c2.groups = 2", "module_attribute", "EQUALS_MATCH on self.c2.groups",
                                       {"x": 4}, None, None, detail="RuntimeError: Given groups=2, weight …"))
    assert row.verdict == "unknown"
    assert row.detail == "after `model.c2.groups = 2`: RuntimeError: Given groups=2, weight …"


def test_a_shape_whose_numerics_check_ran_eagerly_is_no_pass_in_the_csv():
    """The console says 'eager: not counted'; the CSV said numerics_pass=True, which a CI job
    would count as a pass of the compiled code."""
    import csv
    import io
    from pathlib import Path

    from compilescope.analysis.build import build_run_report
    from compilescope.render import csv as csv_render
    from compilescope.schema import load

    data = Path(__file__).resolve().parents[2] / "data" / "derivations" / "run_recompile_limit.json"
    rows = list(csv.DictReader(io.StringIO(csv_render.render(build_run_report(load(data))))))
    eager = [r for r in rows if r["how_it_ran"] == "eager fallback"]
    assert eager and all(r["numerics_pass"] == "" and r["numerics_ran_eagerly"] == "True" for r in eager)
    assert any(r["numerics_pass"] == "True" for r in rows if r["how_it_ran"] == "compiled")


def test_the_saving_per_request_counts_the_requests_that_ran_eagerly_as_saving_nothing():
    """Past the recompile limit 3 of static's 5 shapes run eagerly: the break-even was projected
    from the compiled shapes' saving alone, as if every request saved it."""
    from pathlib import Path

    from compilescope.analysis.build import build_run_report, measured_rows
    from compilescope.schema import load

    data = Path(__file__).resolve().parents[2] / "data" / "derivations" / "run_recompile_limit.json"
    static = next(t for t in build_run_report(load(data)).trials if t.strategy == "static")
    measured = measured_rows(static.rows)
    eager = [r for r in static.rows if r.status == "eager fallback"]
    assert measured and eager
    saved = sum(r.requests * (r.eager.median - r.steady.median) for r in measured)
    assert static.saving_per_request_s == pytest.approx(saved / sum(r.requests for r in [*measured, *eager]))


def test_a_stream_order_that_measured_cheaper_beyond_the_band_is_could_not_tell_not_no_difference():
    from types import SimpleNamespace

    from compilescope.analysis.guards import _stream_text

    s = SimpleNamespace(stream_s=207e-6, repeated_s=214e-6, mean_tried=3.0, significant=False, extra_s=-7e-6,
                        noise_s=4.16e-6, extra_total_s=-21e-6)
    said = _stream_text(s, [object()] * 3)
    assert said.endswith(": could not tell (the stream's order measured 7 µs less, beyond the ±4.16 µs band, which "
                         "trying more entries cannot cause)"), said
    inside = _stream_text(SimpleNamespace(**{**vars(s), "extra_s": -2e-6}), [object()] * 3)
    assert inside.endswith(": no difference beyond the noise (±4.16 µs)")
