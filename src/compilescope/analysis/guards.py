"""The third cost, derived: what the guards charged every call (:mod:`compilescope.report.guards`
states the definitions).

From a trial's :class:`~compilescope.model.GuardCost` records (each shape's compiled frames,
every cache entry's guard check timed on that shape's inputs) and its calls:

* per shape (:func:`shape_guard_row`): the lookup with the shape's entry tried first, its
  share of the compiled call, the guards by kind and the costliest sources;
* per stream request (:func:`stream_points`): the entries tried before the hit in the order
  Dynamo kept them — a compile puts its entry first, a hit moves its entry first, the graphs a
  call ran say which entry it hit — and the lookup that order cost, from the measured checks;
* the summary (:func:`guard_summary`): the stream's mean lookup against the same requests with
  their entries tried first, the difference (what the entries earlier requests created cost
  later ones) and whether it is beyond the noise.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..model import (CallRecord, CompileId, CompileRecord, EntryCheck, FrameGuards, GuardCost, GuardGroup, Shape, SoundnessCheck,
                     TrialResult, shape_key, shape_label)
from ..report import GuardPoint, GuardShapeRow, GuardSourceRow, GuardSummary, ShapeRow, SoundnessRow, Stats
from ..units import fmt_time
from .presented import source_label
from .regimes import iqr_separated, summarize_samples

TOP_SOURCES = 3


def _median(samples: Sequence[float]) -> float | None:
    return statistics.median(samples) if samples else None


def _half_iqr(samples: Sequence[float]) -> float:
    s = summarize_samples(samples)
    return s.iqr / 2 if s is not None else 0.0


def passing(frame: FrameGuards):  # type: ignore[no-untyped-def]
    """The frame's entry whose guards passed on the shape's inputs, or None."""
    return next((c for c in frame.checks if c.passed), None)


def lookup_samples(cost: GuardCost) -> list[float]:
    """A call's lookup with its entries tried first, once per sampling round: each frame's
    passing check times the times a request enters the frame, summed over frames (empty when
    a frame has no timed passing entry)."""
    hits = [(f.calls, passing(f)) for f in cost.frames]
    if not hits or any(h is None or not h.samples_s for _, h in hits):
        return []
    rounds = min(len(h.samples_s) for _, h in hits if h is not None)
    return [sum(n * h.samples_s[r] for n, h in hits if h is not None) for r in range(rounds)]


def lookup_stats(cost: GuardCost) -> Stats | None:
    """The median and quartiles of :func:`lookup_samples`."""
    return summarize_samples(lookup_samples(cost))


def source_rows(frames: Sequence[FrameGuards]) -> tuple[GuardSourceRow, ...]:
    """The passing entries' guards by source, over every frame a call enters (each frame's
    guards times its calls, as the shape's guard count is), costliest first: a group's time is
    its frame's copied whole tree's median minus the copy without the group, kept only when the
    two samples' IQRs are apart (otherwise it is inside the noise, and the rows order by count);
    its share is of every frame's copied tree together. A module, global or the ambient state
    guarded in more than one frame is one row; a frame's inputs are its own (a resume frame's
    ``x`` is an intermediate value, not the call's ``x``), named with their frame after the
    first."""
    total = sum(g.guards * f.calls for f in frames for g in f.groups) or 1
    bases = [summarize_samples(f.copy_s) for f in frames]
    whole = sum(b.median * f.calls for b, f in zip(bases, frames) if b is not None)
    merged: dict[tuple[str, str], dict] = {}
    for i, (f, base) in enumerate(zip(frames, bases)):
        for g in f.groups:
            owner = f"{g.owner} of {f.function}" if g.category == "input" and i else g.owner
            row = merged.setdefault((g.category, owner), {"owners": 0, "guards": 0, "kinds": [], "time": None})
            row["owners"] = max(row["owners"], g.owners)
            row["guards"] += g.guards * f.calls
            row["kinds"].append(_kinds([g], f.calls))
            without = summarize_samples(g.samples_s)
            if base is not None and without is not None and base.median > without.median \
                    and iqr_separated((base.q1, base.q3), (without.q1, without.q3)):
                row["time"] = (row["time"] or 0.0) + (base.median - without.median) * f.calls
    rows = [GuardSourceRow(category, owner, r["owners"], r["guards"], _merge_kinds(r["kinds"]), r["guards"] / total,
                           r["time"], r["time"] / whole if r["time"] is not None and whole else None)
            for (category, owner), r in merged.items()]
    return tuple(sorted(rows, key=lambda r: (-(r.share or 0.0), -r.guards)))


def _kinds(groups: Iterable[GuardGroup], times: int = 1) -> tuple[tuple[str, int], ...]:
    out: dict[str, int] = {}
    for g in groups:
        for kind, n in g.kinds.items():
            out[kind] = out.get(kind, 0) + n * times
    return tuple(sorted(out.items(), key=lambda kv: -kv[1]))


def _pytorch_latency(cost: GuardCost, compiles: Sequence[CompileRecord]) -> float | None:
    """PyTorch's own figure for the entries that pass (their compiles' ``guard_latency_us``)."""
    ids = {(f.frame, h.entry) for f in cost.frames if (h := passing(f)) is not None}
    found = [r.guard_latency_s for r in compiles if r.guard_latency_s is not None
             and (r.compile_id.frame, str(r.compile_id)) in ids]
    return sum(found) if found else None


def shape_guard_row(cost: GuardCost, row: ShapeRow | None, compiles: Sequence[CompileRecord]) -> GuardShapeRow:
    """One shape's guard cost with its entries tried first."""
    label = shape_label(cost.shape)
    frames = cost.frames
    errors = [f.error for f in frames if f.error] + ([cost.error] if cost.error else [])
    lookup = lookup_stats(cost)
    misses = [m for f in frames for c in f.checks if not c.passed and (m := _median(c.samples_s)) is not None]
    steady = row.steady.median if row is not None and row.steady is not None else None
    groups = [(f.calls, g) for f in frames for g in f.groups]
    sources = source_rows(frames) if any(f.groups for f in frames) else ()
    return GuardShapeRow(
        shape=label, frames=len(frames), entries=max((len(f.order) for f in frames), default=None), lookup=lookup,
        guards=sum(f.guards * f.calls for f in frames) if frames and not any(f.error for f in frames) else None,
        kinds=_merge_kinds([_kinds([g], n) for n, g in groups]),
        share=lookup.median / steady if lookup is not None and steady else None,
        miss_s=statistics.median(misses) if misses else None,
        pytorch_latency_s=_pytorch_latency(cost, compiles), sources=sources[:TOP_SOURCES * 2],
        note="; ".join(errors))


def _merge_kinds(parts: Iterable[tuple[tuple[str, int], ...]]) -> tuple[tuple[str, int], ...]:
    out: dict[str, int] = {}
    for part in parts:
        for kind, n in part:
            out[kind] = out.get(kind, 0) + n
    return tuple(sorted(out.items(), key=lambda kv: -kv[1]))


@dataclass
class _Order:
    """Each frame's cache entries in lookup order, replayed over the trial's calls."""

    entries: dict[int, list[str]]

    def compiled(self, cid: CompileId) -> int:
        """A new entry goes first; returns how many entries it was tried after (all of them)."""
        order = self.entries.setdefault(cid.frame, [])
        before = len(order)
        order.insert(0, str(cid))
        return before

    def hit(self, frame: int, entry: str) -> list[str] | None:
        """The entries tried before ``entry`` (which then moves first), or None if unknown."""
        order = self.entries.get(frame, [])
        if entry not in order:
            return None
        ahead = order[: order.index(entry)]
        order.remove(entry)
        order.insert(0, entry)
        return ahead


def _as_in_stream(checks: Sequence[EntryCheck | None]) -> bool:
    """The checks were timed as the request met them in the stream: the entries ahead of the
    one it ran rejected its shape and that one accepted it. Checks are timed after the
    stream, on the cache as it ends; an entry compiled later (a dynamic one) may accept the
    shape first there, and the one the request ran then reads as rejecting it, its check
    timed on another path."""
    *ahead, own = checks
    return own is not None and own.passed and not any(c is not None and c.passed for c in ahead)


def _request_lookup(call: CallRecord, made: set[str], order: _Order, cost: GuardCost | None
                    ) -> tuple[int, float | None, float | None, bool]:
    """(entries tried, lookup, half-IQR noise, compiled) of one request, moving the order on;
    the lookup is None where a check it needs was not measured (the entries tried still count)."""
    tried, total, noise, compiled, known = 0, 0.0, 0.0, False, True
    frames = {f.frame: f for f in (cost.frames if cost is not None else ())}
    for g in dict.fromkeys(call.graphs_run or ()):
        cid = CompileId.parse(g)
        if cid is None:
            return tried, None, None, compiled
        if g in made:
            compiled = True
            continue
        ahead = order.hit(cid.frame, g)
        if ahead is None:
            return tried, None, None, compiled
        tried += len(ahead) + 1
        frame = frames.get(cid.frame)
        checks = {c.entry: c for c in frame.checks} if frame is not None else {}
        involved = [checks.get(e) for e in (*ahead, g)]
        if frame is None or any(c is None or not c.samples_s for c in involved) or not _as_in_stream(involved):
            known = False
            continue
        hit = _median(checks[g].samples_s) or 0.0
        total += sum(_median(c.samples_s) or 0.0 for c in involved) + (frame.calls - 1) * hit  # type: ignore[union-attr]
        noise += sum(_half_iqr(c.samples_s) for c in involved)  # type: ignore[union-attr]
    return (tried, total, noise, compiled) if known else (tried, None, None, compiled)


def stream_points(trial: TrialResult, repeated: dict[tuple[tuple[str, int], ...], float | None]
                  ) -> tuple[list[GuardPoint], list[float]]:
    """Each stream request's entries tried and lookup in the stream's order (start-up calls
    replayed first, as they ran), with the noise of each derived lookup."""
    costs = {shape_key(c.shape): c for c in trial.guard_costs}
    order = _Order({})
    points, noises = [], []
    for phase, calls in (("startup", trial.startup), ("stream", trial.calls)):
        made_at: dict[int, list[CompileRecord]] = {}
        for r in trial.compiles:
            if r.phase == phase and r.call_index is not None and r.made_entry:
                made_at.setdefault(r.call_index, []).append(r)
        for call in calls:
            made = made_at.get(call.index, [])
            missed = sum(order.compiled(r.compile_id) for r in made)
            if call.error is not None or call.graphs_run is None:
                continue
            key = shape_key(call.shape)
            tried, lookup, noise, compiled = _request_lookup(call, {str(r.compile_id) for r in made}, order,
                                                             costs.get(key))
            if phase == "stream":
                points.append(GuardPoint(call.index, shape_label(call.shape), tried + missed,
                                         None if compiled or made else lookup, repeated.get(key), compiled or bool(made)))
                if lookup is not None and not (compiled or made):
                    noises.append(noise or 0.0)
    return points, noises


def _stream_text(s: GuardSummary, hits: Sequence[GuardPoint]) -> str:
    if s.stream_s is None or s.repeated_s is None or not hits:
        return ""
    ratio = s.stream_s / s.repeated_s if s.repeated_s > 0 else None
    base = (f"on this stream's order a hit's guard checks took {fmt_time(s.stream_s)} on average "
            f"({s.mean_tried:.1f} entries tried) against {fmt_time(s.repeated_s)} when its size repeats "
            f"(its entry tried first)")
    if s.extra_s is not None and s.noise_s is not None and s.extra_s < -s.noise_s:
        # more entries tried cannot cost less: a difference the wrong way is the measurement's own
        return base + (f": could not tell (the stream's order measured {fmt_time(-s.extra_s)} less, beyond the "
                       f"±{fmt_time(s.noise_s)} band, which trying more entries cannot cause)")
    if not s.significant or s.extra_s is None or s.extra_s <= 0:
        return base + f": no difference beyond the noise (±{fmt_time(s.noise_s or 0.0)})"
    return (base + f": ×{ratio:.1f}, +{fmt_time(s.extra_s)} a request that hit ({fmt_time(s.extra_total_s or 0.0)} "
            f"over {len(hits)} hit(s) of the stream whose lookups were timed) — the entries other sizes' compiles added "
            "are tried before the request's own")


def _top_text(top: Sequence[GuardSourceRow]) -> str:
    parts = []
    for r in top:
        what = f"{source_label(r)}: {r.guards:,} guards ({r.count_share:.0%})"
        if r.share is not None:
            what += f", the lookup {r.share:.0%} shorter without them"
        parts.append(what)
    if sum(r.share or 0.0 for r in top) > 1.0:  # each group's saving is measured alone
        parts[-1] += (" (each saving measured alone: the groups share parts of the guard tree, so the savings "
                      "overlap and do not add up)")
    return "; ".join(parts)


def guard_summary(trial: TrialResult, rows: Sequence[ShapeRow]) -> GuardSummary | None:
    """The trial's guard report, or None when it measured no guard cost."""
    if not trial.guard_costs:
        return None
    by_shape = {r.shape: r for r in rows}
    grows = tuple(shape_guard_row(c, by_shape.get(shape_label(c.shape)), trial.compiles) for c in trial.guard_costs)
    repeated = {shape_key(c.shape): (r.lookup.median if r.lookup is not None else None)
                for c, r in zip(trial.guard_costs, grows)}
    points, noises = stream_points(trial, repeated)
    hits = [p for p in points if not p.compiled and p.lookup_s is not None and p.repeated_s is not None]
    stream_s = statistics.mean(p.lookup_s for p in hits) if hits else None  # type: ignore[misc]
    repeated_s = statistics.mean(p.repeated_s for p in hits) if hits else None  # type: ignore[misc]
    extra = stream_s - repeated_s if stream_s is not None and repeated_s is not None else None
    noise = statistics.mean(noises) if noises else None
    weighted = [(r.requests, g.share) for g in grows if g.share is not None and (r := by_shape.get(g.shape))]
    against_eager = [(r.requests, g.lookup.median / r.eager.median) for g in grows
                     if g.lookup is not None and (r := by_shape.get(g.shape)) and r.eager is not None and r.eager.median]
    busiest = max(grows, key=lambda g: by_shape[g.shape].requests if g.shape in by_shape else 0)
    top = tuple(r for r in busiest.sources if r.category not in ("ambient", "shape"))[:TOP_SOURCES]
    summary = GuardSummary(
        rows=grows, points=tuple(points), requests=len(hits), stream_s=stream_s, repeated_s=repeated_s,
        mean_tried=statistics.mean(p.tried for p in hits) if hits else None, extra_s=extra,
        extra_total_s=sum(p.lookup_s - p.repeated_s for p in hits) if hits else None,  # type: ignore[operator]
        noise_s=noise, significant=extra is not None and noise is not None and extra > noise,
        share=sum(n * s for n, s in weighted) / sum(n for n, _ in weighted) if weighted else None,
        eager_ratio=sum(n * s for n, s in against_eager) / sum(n for n, _ in against_eager) if against_eager else None,
        top=top, text="", top_text=_top_text(top))
    return dataclasses.replace(summary, text=_stream_text(summary, hits))


def soundness_row(check: SoundnessCheck) -> SoundnessRow:
    """A soundness check in words: stale (the compiled call kept the old result), sound (it
    followed the change), no effect (eager's output did not change: the change tells nothing)."""
    if check.stale:
        err = f" (max abs err {check.max_abs_err:.2g})" if check.max_abs_err is not None else ""
        verdict, detail = "stale", (f"after `{check.mutation}` the compiled call kept its old result where eager's "
                                    f"changed{err}" + (f": {check.detail}" if check.detail else ""))
    elif check.eager_changed is False:
        verdict, detail = "no effect", f"`{check.mutation}` did not change eager's output: it tells nothing"
    elif check.stale is False:
        verdict, detail = "sound", (f"after `{check.mutation}` the compiled call followed the change"
                                    + (" (it compiled again)" if check.recompiled else ""))
    else:  # which change it was is part of the finding (it may be the change that raised)
        told = check.detail or "not told"
        verdict, detail = "unknown", (f"after `{check.mutation}`: {told}" if check.mutation not in ("", "—") else told)
    return SoundnessRow(check.mutation, check.kind, check.guard, shape_label(check.shape), verdict,  # type: ignore[arg-type]
                        detail)


def soundness_fields(trial: TrialResult) -> dict[str, object]:
    """The trial's soundness rows and the kinds of guards its filter dropped (largest first)."""
    return {"soundness": tuple(soundness_row(c) for c in trial.soundness),
            "dropped_guards": tuple(sorted(trial.dropped_guards.items(), key=lambda kv: (-kv[1], kv[0])))}


def guard_data(g: GuardSummary | None) -> dict[str, object] | None:
    """The guard report as a results file's summary holds it (derived; ignored on load)."""
    if g is None:
        return None
    return {
        "lookup_per_request_stream_s": g.stream_s, "lookup_per_request_repeated_s": g.repeated_s,
        "mean_entries_tried": g.mean_tried, "extra_per_request_s": g.extra_s, "extra_total_s": g.extra_total_s,
        "noise_s": g.noise_s, "beyond_noise": g.significant, "share_of_call": g.share, "finding": g.text,
        "top_sources": g.top_text,
        "shapes": {r.shape: {"entries": r.entries, "lookup_s": r.lookup.median if r.lookup else None,
                             "lookup_iqr_s": r.lookup.iqr if r.lookup else None, "share_of_call": r.share,
                             "one_rejecting_entry_s": r.miss_s, "guards": r.guards, "by_kind": dict(r.kinds),
                             "pytorch_guard_latency_s": r.pytorch_latency_s,
                             "sources": [{"category": s.category, "owner": s.owner, "owners": s.owners,
                                          "guards": s.guards, "time_s": s.time_s, "share": s.share} for s in r.sources]}
                   for r in g.rows},
        "requests": [{"index": p.index, "shape": p.shape, "entries_tried": p.tried, "lookup_s": p.lookup_s,
                      "compiled": p.compiled} for p in g.points],
    }


Accepts = Callable[[str, Shape], "bool | None"]  # does the entry (compile id) accept the shape? None: cannot tell


def forecast_lookups(stream: Sequence[Shape], dry: TrialResult, measured: TrialResult | None = None,
                     accepts: tuple[int, Accepts] | None = None) -> list[tuple[int | None, float | None]]:
    """For each request of ``stream``: the cache entries its lookup will try (the passing one
    included; for a request that compiles, every entry it rejected) and, when ``measured`` —
    a run of the same strategy and workload that timed its guard checks — gives them, what
    that lookup costs; else None. From a dry run of the stream's distinct shapes (``dry``,
    in order of first appearance): each shape's first request compiles what its traced call
    compiled; a hit runs the first entry, in the order Dynamo keeps (the newest or the last
    hit first), that accepts it — which need not be the one its shape's traced call ran (a
    repeat of a shape whose static entry a later dynamic one now precedes runs the dynamic
    one): ``accepts`` — (a frame, whether its entry accepts a shape) — tells, for that
    frame's entries (the compiled function's own, whose inputs are the request's); where it
    cannot tell, the request's entries tried are None, and so are the requests' after it
    (the order is then unknown). Without ``accepts`` each request runs the entry its
    shape's traced call ran. The order of the entries is replayed as Dynamo keeps it
    (:func:`stream_points`)."""
    firsts = {shape_key(c.shape): c for c in dry.calls}
    made: dict[int, list] = {}  # a call that compiled several frames (a graph break) made several entries
    for r in dry.compiles:
        if r.phase == "stream" and r.made_entry and r.call_index is not None:
            made.setdefault(r.call_index, []).append(r)
    calls, compiles, seen = [], [], set()
    order = _Order({})
    lost = None  # the first request whose entry could not be told
    for i, shape in enumerate(stream):
        key = shape_key(shape)
        traced = firsts.get(key)
        if traced is None:
            return [(0, None)] * len(stream)
        new = key not in seen and traced.index in made
        seen.add(key)
        ran = traced.graphs_run
        if new:
            compiles.extend(dataclasses.replace(r, call_index=i) for r in made[traced.index])
            for r in made[traced.index]:
                order.compiled(r.compile_id)
        elif accepts is not None and ran and lost is None:
            ran = _first_accepting(ran, shape, order, accepts)
            if ran is None:
                lost = i
        if lost is None:  # a compiling request's hits in its other frames move their entries first too
            fresh = {str(r.compile_id) for r in made[traced.index]} if new else set()
            for g in dict.fromkeys(ran or ()):
                if g not in fresh and (cid := CompileId.parse(g)) is not None:
                    order.hit(cid.frame, g)
        calls.append(CallRecord(i, dict(shape), None, graphs_run=ran if ran is not None else traced.graphs_run))
    trial = TrialResult(dry.spec, "ok", calls=tuple(calls), compiles=tuple(compiles),
                        guard_costs=measured.guard_costs if measured is not None else ())
    costs = {shape_key(c.shape): c for c in trial.guard_costs}
    repeated = {k: (s.median if (s := lookup_stats(c)) is not None else None) for k, c in costs.items()}
    points, _ = stream_points(trial, repeated)
    return [(p.tried, p.lookup_s) if lost is None or p.index < lost else (None, None) for p in points]


def _first_accepting(ran: tuple[str, ...], shape: Shape, order: _Order, accepts: tuple[int, Accepts]
                     ) -> tuple[str, ...] | None:
    """The entries a hit runs, one per frame: for each frame the traced call ran, the first
    entry in the frame's current order that accepts ``shape`` (the traced one does); None
    when an entry ahead of it cannot be told."""
    out = []
    for g in ran:
        cid = CompileId.parse(g)
        if cid is None:
            return None
        chosen = g
        frame, accepted = accepts
        for e in order.entries.get(cid.frame, []) if cid.frame == frame else ():
            if e == g:
                break
            said = accepted(e, shape)
            if said is None:
                return None
            if said:
                chosen = e
                break
        out.append(chosen)
    return tuple(out)
