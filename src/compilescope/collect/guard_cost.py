"""What the guards charge on every call, measured apart from the steady-state samples.

Before a compiled frame runs, Dynamo evaluates the guards of its cache entries in turn — the
most recently hit first — until one entry's guards all pass. For one shape, after its steady
state, :func:`measure_guard_cost`:

1. runs one call with a profile hook (:func:`compilescope.compat.compiled_frame_calls`) to
   learn each compiled frame the request enters and that frame's inputs, as its guards read
   them (``L['self']``, ``L['x']``…);
2. finds the entry whose guards pass on those inputs, and groups that entry's guards by
   source (:func:`guard_groups`: the frame's inputs, modules, parameters, globals, the
   ambient state, shape relations);
3. samples in cycles, each sample right after its own real call (untimed: it leaves the
   caches as the next call's lookup finds them, so every sample starts from the same state):
   each entry's whole guard check on the inputs, the passing one first, then the passing
   entry's check without each of the largest groups' own managers (a part of the entry's
   guard tree): the whole check's time minus that is what the group adds to the lookup —
   what a guard filter dropping those guards could save.

Every sample is raw (seconds) in the records; the statistics are derived in
:mod:`compilescope.analysis.guards`. The timed steady samples never run with any of this:
the phase comes after them, and its hook is off outside its one call.

Why the guard managers are timed here and not the profiler's ``TorchDynamo Cache Lookup``
event: the event is one figure per lookup with every op of the call recorded around it (the
profiler slows each op), while the managers give the cost of each entry tried, of the entry
that passes and of each part of it, on the call's own inputs, with nothing else running;
``benchmarks/guard_cost.py`` compares the two, and PyTorch's ``guard_latency_us``, on the
same calls.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import compat
from ..model import EntryCheck, FrameGuards, GuardCost, GuardGroup, Shape
from ..torchtext import classify_source, readable

MAX_FRAMES = 8  # distinct compiled frames measured for one request
MAX_ENTRIES = 64  # cache entries of a frame timed
MAX_TIMED_GROUPS = 6  # source groups timed alone (the largest); the rest are counted only
MAX_GUARD_LEAVES = 50_000

_INDEX = re.compile(r"\[\d+\]")


def guard_groups(leaves: Sequence[compat.GuardLeafInfo], inputs: Mapping[str, Any]
                 ) -> tuple[list[tuple[GuardGroup, frozenset[str]]], frozenset[str]]:
    """The entry's guards grouped by (category, owner with module indices folded), largest
    first, each with the sources of the managers a part of the tree *without* the group keeps:
    every manager but those whose guards below are all the group's (the root always stays);
    and every manager's source (the whole tree, copied as the parts are)."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    under: dict[str, set[tuple[str, str]]] = {}  # manager source → the groups of the guards below it
    for leaf in leaves:
        category, owner = classify_source(leaf.source, leaf.kind, inputs)
        shown = readable(owner) if category not in ("ambient", "shape") else owner
        key = (category, _INDEX.sub("[*]", shown))
        g = groups.setdefault(key, {"kinds": {}, "owners": set()})
        g["kinds"][leaf.kind] = g["kinds"].get(leaf.kind, 0) + 1
        g["owners"].add(shown)
        for source in leaf.path:
            under.setdefault(source, set()).add(key)
    every = frozenset(under)
    out = []
    for key, g in groups.items():
        own = {s for s, keys in under.items() if keys == {key} and s != "L"}
        out.append((GuardGroup(key[0], key[1], len(g["owners"]),
                               dict(sorted(g["kinds"].items(), key=lambda kv: -kv[1]))), every - own))
    return sorted(out, key=lambda pair: -pair[0].guards), every


def _frame_name(code: Any) -> str:
    import os

    return f"{getattr(code, 'co_name', '?')} ({os.path.basename(str(getattr(code, 'co_filename', '?')))}:" \
           f"{getattr(code, 'co_firstlineno', 0)})"


class _Frame:
    """One compiled frame of the request: its entries, the one that passes, what is timed."""

    def __init__(self, call: compat.FrameCall, calls: int, parts: bool,
                 at_entry: tuple[dict[str, Any], str | None] | None = None) -> None:
        """``at_entry``: the frame's inputs and the compile id of the entry that passed on
        them, read at the frame's start (a call that changes its inputs); otherwise read from
        ``call``."""
        self.call, self.calls = call, calls
        self.entries = compat.cache_entries(call.code)[:MAX_ENTRIES]
        self.ids = [compat.entry_compile_id(e) or "?" for e in self.entries]
        self.checks = [compat.entry_guard_check(e) for e in self.entries]
        self.fresh = at_entry is not None  # its inputs read at its start, in a call made afresh
        self.unread = self.fresh and not at_entry[0]  # type: ignore[index]  # that start not reached
        if at_entry is not None:
            self.inputs, passed = at_entry
            self.passed = self.ids.index(passed) if passed in self.ids and passed != "?" else None
        else:
            self.inputs = call.at_entry or call.inputs  # as the lookup read them; else as they are after the call
            self.passed = self.passing(self.inputs)
            if self.passed is None and self.inputs is not call.inputs:  # an argument whose identity a guard checks
                self.inputs = call.inputs
                self.passed = self.passing(self.inputs)
        self.samples: list[list[float]] = [[] for _ in self.entries]
        self.groups: list[tuple[GuardGroup, frozenset[str]]] = []
        self.parts: list[Callable[[dict[str, Any]], bool] | None] = []
        self.part_samples: list[list[float]] = []
        self.copy: Callable[[dict[str, Any]], bool] | None = None
        self.copy_samples: list[float] = []
        self.guards, self.cut = 0, 0
        if self.passed is not None:
            hit = self.entries[self.passed]
            leaves, self.cut = compat.entry_guard_leaves(hit, MAX_GUARD_LEAVES)
            self.guards = len(leaves) + self.cut
            self.groups, every = guard_groups(leaves, self.inputs)
            self.parts = [compat.entry_guard_part(hit, sources)
                          if parts and i < MAX_TIMED_GROUPS and g.category not in ("ambient", "shape") else None
                          for i, (g, sources) in enumerate(self.groups)]
            self.part_samples = [[] for _ in self.groups]
            if any(p is not None for p in self.parts):
                self.copy = compat.entry_guard_part(hit, every)

    def passing(self, inputs: dict[str, Any]) -> int | None:
        return next((i for i, check in enumerate(self.checks) if _safe(check, inputs)), None)

    def timers(self) -> list[tuple[Callable[[dict[str, Any]], bool], dict[str, Any], list[float]]]:
        """What one cycle times, each right after its own real call: the passing entry's
        check, every other entry's, then the passing entry's without each timed group."""
        inputs = self.inputs
        order = [self.passed] + [i for i in range(len(self.checks)) if i != self.passed]
        out = [(self.checks[i], inputs, self.samples[i]) for i in order if i is not None]
        if self.copy is not None:
            out.append((self.copy, inputs, self.copy_samples))
            out += [(part, inputs, samples) for part, samples in zip(self.parts, self.part_samples)
                    if part is not None]
        return out

    def record(self) -> FrameGuards:
        frame = next((int(i.split("/")[0]) for i in self.ids if i != "?"), None)
        if self.passed is None:
            return FrameGuards(_frame_name(self.call.code), frame, self.calls, tuple(self.ids), error=(
                "the frame's start was not reached on inputs made afresh" if self.unread else
                "no cache entry's guards passed on the inputs read at the frame's start" if self.fresh else
                "no cache entry's guards passed on the inputs outside the call (state the call sets around the "
                "compiled frame?)"))
        checks = tuple(EntryCheck(self.ids[i], i == self.passed, tuple(self.samples[i])) for i in range(len(self.ids)))
        groups = tuple(g if not s else _with_samples(g, s) for (g, _), s in zip(self.groups, self.part_samples))
        return FrameGuards(_frame_name(self.call.code), frame, self.calls, tuple(self.ids), checks, self.guards,
                           groups, tuple(self.copy_samples), self.cut)


def _with_samples(group: GuardGroup, samples: list[float]) -> GuardGroup:
    import dataclasses

    return dataclasses.replace(group, samples_s=tuple(samples))


def _safe(check: Callable[[dict[str, Any]], bool], inputs: dict[str, Any]) -> bool:
    try:
        return bool(check(inputs))
    except Exception:  # noqa: BLE001 - a guard that cannot run here does not pass
        return False


def _timed(check: Callable[[dict[str, Any]], bool], inputs: dict[str, Any], clock: Callable[[], int]) -> float:
    start = clock()
    try:
        check(inputs)
    except Exception:  # noqa: BLE001 - timed as it ran
        pass
    return (clock() - start) / 1e9


def measure_guard_cost(call: Callable[[], Any], shape: Shape, *, min_rounds: int = 5, max_rounds: int = 30,
                       budget_s: float = 1.0, parts: bool = True,
                       clock: Callable[[], int] = time.perf_counter_ns,
                       fresh: Callable[[], Callable[[], Any]] | None = None) -> GuardCost:
    """The guard cost of one shape's request (see the module's description). ``call`` makes
    one request of the shape (the compiled callable, with what runs before each call);
    ``parts``: also time the passing entry without each of its largest source groups.
    ``fresh``, for a call that changes its inputs (a decode step growing the cache it is
    given): makes such a request on inputs made afresh; each request is then made on fresh
    inputs, and each check timed at the frame's start (:func:`compilescope.compat.at_frame_entry`),
    on the inputs the lookup has just read — after the call they are no longer what it read. A
    failure is recorded in ``error``, never raised."""
    make = fresh if fresh is not None else (lambda: call)
    try:
        _, seen = compat.compiled_frame_calls(make())
    except Exception as exc:  # noqa: BLE001 - a request that raises here is recorded, not re-raised
        return GuardCost(shape, error=f"the call raised {type(exc).__name__}: {str(exc)[:200]}")
    if not seen:
        return GuardCost(shape, error="no compiled frame ran (the request ran eagerly)")
    counts: dict[int, int] = {}
    first: dict[int, compat.FrameCall] = {}
    for fc in seen:
        counts[id(fc.code)] = counts.get(id(fc.code), 0) + 1
        first.setdefault(id(fc.code), fc)
    measured = list(first.items())[:MAX_FRAMES]
    try:
        entry = _read_at_entry(make(), [fc.code for _, fc in measured]) if fresh is not None else {}
    except Exception as exc:  # noqa: BLE001 - the user's call: recorded, not re-raised
        return GuardCost(shape, error=f"the call raised {type(exc).__name__}: {str(exc)[:200]}")
    try:
        frames = [_Frame(fc, counts[key], parts, entry.get(key, ({}, None)) if fresh is not None else None)
                  for key, fc in measured]
        timers = [(id(f.call.code), *t) for f in frames if f.passed is not None for t in f.timers()]
    except Exception as exc:  # noqa: BLE001 - a cache entry this torch lays out otherwise: recorded, not raised
        return GuardCost(shape, error=f"reading the cache entries raised {type(exc).__name__}: {str(exc)[:200]}")
    rounds = 0
    deadline = time.perf_counter() + budget_s
    try:
        while timers and rounds < max_rounds and (rounds < min_rounds or time.perf_counter() < deadline):
            for code, check, inputs, samples in timers:
                if fresh is None:
                    call()  # the real call: the check that follows finds the caches as a call leaves them
                    samples.append(_timed(check, inputs, clock))
                else:  # right after the real lookup, on the inputs it read
                    compat.at_frame_entry(fresh(), {code: _sampler(check, samples, clock)})
            rounds += 1
    except Exception as exc:  # noqa: BLE001
        return GuardCost(shape, tuple(f.record() for f in frames), rounds,
                         error=f"the call raised {type(exc).__name__}: {str(exc)[:200]}")
    return GuardCost(shape, tuple(f.record() for f in frames), rounds)


def _sampler(check: Callable[[dict[str, Any]], bool], samples: list[float],
             clock: Callable[[], int]) -> Callable[[dict[str, Any]], None]:
    return lambda inputs: samples.append(_timed(check, inputs, clock))


def _read_at_entry(call: Callable[[], Any], codes: Sequence[Any]) -> dict[int, tuple[dict[str, Any], str | None]]:
    """Each frame's inputs at its start in one call, and the compile id of its entry that
    passes on them."""
    out: dict[int, tuple[dict[str, Any], str | None]] = {}

    def reader(code: Any) -> Callable[[dict[str, Any]], None]:
        def read(inputs: dict[str, Any]) -> None:
            passing = next((e for e in compat.cache_entries(code) if _safe(compat.entry_guard_check(e), inputs)), None)
            out[id(code)] = (inputs, compat.entry_compile_id(passing) if passing is not None else None)
        return read

    compat.at_frame_entry(call, {id(code): reader(code) for code in codes})
    return out
