"""Plan the warm-up by dry run: for each strategy, the smallest ordered list of shapes to call
at start-up so that replaying the recorded stream compiles nothing after start-up.

Every step is a dry run (:mod:`compilescope.forecast.engine`: the real Dynamo on the real
code, calls on fake tensors of the real device, a backend that compiles nothing), so a plan
is a forecast until measured (:mod:`compilescope.warmup.measure`) or verified on a held-out
stream:

1. dry-run the recorded stream's distinct shapes in stream order under a recompile limit
   high enough to refuse nothing, so the plan is not cut short by the limit; the candidate
   start-up list is the shapes that compiled, in stream order;
2. check it: every distinct shape called once more, in the same dry run, must compile
   nothing (and run nothing eagerly). When every first call compiled or hit, that is the
   replay of the list alone from a reset: Dynamo's cache entries and each frame's automatic
   dynamic decisions come from compiles alone (a hit adds no entry; it moves its entry to the
   front of the frame's cache, which orders the guards a later miss reports, so a shape that
   misses is shown with the guard its own entry failed). When a first call raised, ran
   eagerly at a limit given, or could not be predicted, the list is replayed from a reset
   instead. Neither replays state the program changes on a hit (a call counter it branches
   on): ``--verify``'s real trial of start-up then held-out requests is the check of that.
   When the check does not hold, the shapes that still compile are added and the list
   replayed from a reset, a bounded number of rounds (:data:`MAX_REPAIRS`);
3. make it smallest: drop each shape in turn, latest first, keeping a drop when the replay
   still compiles nothing after start-up, within :data:`MAX_DRY_RUNS` dry runs — skipped for a
   static strategy (:meth:`Strategy.static <compilescope.strategies.Strategy.static>`), where
   each graph accepts only its own sizes (so no drop can hold). The last shape's drop needs no
   dry run when that shape compiled at start-up: without it, it is called on the cache it
   compiled on, so it compiles again;
4. record the cache entries one frame needs and the ``recompile_limit`` that takes (``None``
   when PyTorch's default suffices; never raised silently: the plan's notes say it).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import compat
from ..analysis.outcomes import limit_in_force
from ..errors import OptionError
from ..model import MeasureOptions, Shape, StrategyOptions, StrategyPlan, Uncovered, WarmupPlan, shape_key
from ..strategies import get_strategy
from ..stream import distinct_shapes

DEFAULT_PLAN_STRATEGIES = ("default", "static", "dynamic")
MAX_DRY_RUNS = 16  # the drop-each-shape check's bound, per strategy
MAX_REPAIRS = 3  # rounds of adding still-compiling shapes when the first list does not hold

# told each planning step, so that a long dry run is never silence: (strategy, phase), and
# (strategy, None) when the strategy's plan is done
StepFn = Callable[[str, "str | None"], None]


def _silent(_strategy: str, _phase: str | None) -> None:
    pass


@dataclass(frozen=True)
class Replay:
    """A checked start-up list: each of the stream's distinct shapes' predicted outcome after
    the ``startup`` calls, and the most cache entries one frame asked for."""

    startup: tuple[Shape, ...]
    after: tuple[tuple[Shape, str, str], ...]  # (shape, outcome, why) per distinct stream shape
    frame_entries: int
    compiles: int  # frame compiles made during start-up
    last_compiled: bool = False  # the last start-up call compiled a frame
    fails: frozenset[Any] = frozenset()  # keys of the shapes whose compile fails (start-up cannot hold them)

    @property
    def holds(self) -> bool:
        return all(outcome == "hit" for _, outcome, _ in self.after)

    def failing(self) -> list[Shape]:
        """The shapes that still compile after start-up, and could be added to it: not one whose
        compile fails — called at start-up, it would leave its frame running eagerly for good."""
        return [shape for shape, outcome, _ in self.after if outcome == "compile" and shape_key(shape) not in self.fails]


def _why(outcome: str, guards: Sequence[Any], error: str | None, limit: int, why: str | None = None) -> str:
    """``why``: the dry run's, for an unknown or eager request (an eager one past a failed
    compile says so; at the limit, the limit is named)."""
    if outcome == "compile" and why:  # its compile fails: a frame runs eagerly from then on
        return f"its compile fails: {why}"
    if outcome == "compile":
        return guards[0].text if guards else "compiles (no guard text recorded: a frame compiled for the first time)"
    if outcome == "eager":
        return f"eager: {why}" if why and "recompile limit" not in why else f"eager: recompile limit ({limit})"
    if outcome == "unknown":
        return why or "no prediction"
    return error or ""


class _Missed(Exception):
    """A call after start-up compiled or ran eagerly: a replay asked to stop there does."""

    def __init__(self, shape: Shape, outcome: str) -> None:
        self.shape, self.outcome = shape, outcome


def _stop_at_miss(k: int) -> Any:
    """A dry trial's sink that stops at the first call from ``k`` on that does not hit (in the
    forecast's words, :func:`~compilescope.analysis.outcomes.forecast_word`)."""
    from ..analysis.outcomes import classify_calls, forecast_word

    calls: list[Any] = []
    records: list[Any] = []

    def sink(record: Any, compiles: Any, breaks: Any) -> None:
        calls.append(record)
        records.extend(compiles)
        if record.index < k:
            return
        seen = classify_calls(calls, records)[-1]
        word = forecast_word(seen.outcome, bool(seen.made))
        if word in ("compile", "eager"):
            raise _Missed(dict(record.shape), word)
    return sink


def replay(workload_ref: str, strategy: str, startup: Sequence[Shape], distinct: Sequence[Shape],
           options: StrategyOptions, stop_at_miss: bool = False) -> Replay:
    """Dry-run ``startup`` then ``distinct``; outcomes are read after the start-up part. With
    ``stop_at_miss`` the dry run ends at the first call after start-up that does not hit (the
    replay then holds that one outcome): enough to refuse a candidate list, at a fraction of
    the cost."""
    from ..forecast.engine import dry_trial

    shapes = [dict(s) for s in startup] + [dict(s) for s in distinct]
    try:
        trial = dry_trial(workload_ref, strategy, shapes, options,
                          sink=_stop_at_miss(len(startup)) if stop_at_miss else None)
    except _Missed as missed:
        return Replay(tuple(dict(s) for s in startup), ((missed.shape, missed.outcome, "stopped at this miss"),), 0, 0)
    if trial.status == "unavailable":
        raise OptionError(f"{strategy} is unavailable: {trial.error}")
    return _read(trial, [dict(s) for s in startup], distinct, options)


def _read(trial: Any, startup: list[Shape], distinct: Sequence[Shape], options: StrategyOptions,
          observed: Sequence[Any] | None = None) -> Replay:
    """The replay a dry ``trial`` of ``startup`` then ``distinct`` made (``observed``: its
    outcomes, when already read)."""
    from ..analysis.counts import count_compiles, graphs_needed
    from ..forecast.engine import dry_outcomes

    k = len(startup)
    observed = dry_outcomes(trial, k + len(distinct)) if observed is None else observed
    if len(observed) != k + len(distinct):
        raise OptionError(f"the dry run of {trial.spec.strategy!r} recorded {len(observed)} of "
                          f"{k + len(distinct)} calls")
    limit = limit_in_force(options.recompile_limit)
    own: dict[Any, set[str]] = {}  # the entries each start-up shape's call compiled
    for shape, o in zip(startup, observed[:k]):
        own.setdefault(shape_key(shape), set()).update(o.compile_ids)

    def first_own(shape: Shape, guards: Sequence[Any]) -> list[Any]:
        # why a shape compiled again: the guard its own start-up entry failed, before any other
        mine = own.get(shape_key(shape), set())
        return sorted(guards, key=lambda g: g.entry not in mine)

    after = tuple((dict(distinct[i]), o.outcome, _why(o.outcome, first_own(distinct[i], o.guards), o.error, limit,
                                                      o.why))
                  for i, o in enumerate(observed[k:]))
    early = [r for r in trial.compiles if r.call_index is not None and r.call_index < k]
    last = [r for r in early if r.call_index == k - 1]
    fails = frozenset(shape_key(distinct[i]) for i, o in enumerate(observed[k:]) if o.blocks is not None)
    return Replay(tuple(startup), after, graphs_needed(trial.compiles), count_compiles(early).compiles,
                  count_compiles(last).compiles > 0, fails)


def _recorded_and_checked(workload_ref: str, strategy: str, distinct: Sequence[Shape],
                          options: StrategyOptions) -> Replay | str:
    """One dry run of the stream's distinct shapes in stream order, then each again: the
    shapes that compiled the first time are the candidate start-up list, and the second pass
    is that list's check (the module's docstring, step 2). Or why the strategy has no plan."""
    from ..forecast.engine import dry_outcomes, dry_trial

    shapes = [dict(s) for s in distinct]
    trial = dry_trial(workload_ref, strategy, [*shapes, *shapes], options)
    if trial.status == "unavailable":
        return f"{strategy} is unavailable: {trial.error}"
    observed = dry_outcomes(trial, 2 * len(shapes))
    first = observed[: len(shapes)]
    # a shape whose compile fails is no start-up call: Dynamo would run its frame eagerly from then on
    startup = [s for s, o in zip(shapes, first) if o.outcome == "compile" and o.blocks is None]
    if any(o.outcome not in ("compile", "hit") for o in first):  # the first pass built more than the list
        return replay(workload_ref, strategy, startup, shapes, options)
    done = _read(trial, shapes, shapes, options, observed)
    return dataclasses.replace(done, startup=tuple(startup), last_compiled=bool(startup))


def _repaired(workload_ref: str, strategy: str, first: Replay, distinct: Sequence[Shape],
              options: StrategyOptions, on_step: StepFn = _silent) -> tuple[Replay, int]:
    """While the checked list does not hold, add the shapes that still compile and replay it
    (a bounded number of rounds; ``on_step`` hears each). Returns the last replay and the dry
    runs made (the first check's included)."""
    runs = 1
    current = first
    while not current.holds and runs <= MAX_REPAIRS:
        extra = [s for s in current.failing() if shape_key(s) not in {shape_key(t) for t in current.startup}]
        if not extra:
            break
        on_step(strategy, f"adding {len(extra)} shape(s) that still compile to the start-up list")
        current = replay(workload_ref, strategy, [*current.startup, *extra], distinct, options)
        runs += 1
    return current, runs


def _smallest(workload_ref: str, strategy: str, start: Replay, distinct: Sequence[Shape],
              options: StrategyOptions, budget: int) -> tuple[Replay, str]:
    """Drop each start-up shape in turn, latest first, keeping a drop that still holds."""
    n = len(start.startup)
    if n <= 1 and start.holds:
        return start, ("one start-up shape: nothing to drop" if n else "no start-up shape needed")
    if not start.holds:
        return start, "not checked: the list does not keep every recorded shape off the request path"
    if get_strategy(strategy).static(options):
        return start, (f"not checked by dry run: under {strategy} each of the {n} start-up shapes is the only graph "
                       "accepting its sizes (a static entry accepts only the sizes it was traced for), so no drop can "
                       "hold")
    current, runs, dropped = start, 0, 0
    last = n - 1 if start.last_compiled else n  # its drop cannot hold (the module's docstring, step 3)
    kept = "; the last cannot be dropped: it compiled on the cache the others build" if last < n else ""
    for i in range(last - 1, -1, -1):
        if runs >= budget:
            return current, (f"partly checked: {runs} drop(s) tried within the bound of {_dry_runs(budget)}, "
                             f"{dropped} kept; shapes 1..{i + 1} not tried{kept}")
        candidate = _without(workload_ref, strategy, current.startup, i, distinct, options)
        runs += 1
        if candidate.holds:
            current, dropped = candidate, dropped + 1
    if last < n:
        return current, (f"checked: each start-up shape but the last dropped in turn ({_dry_runs(runs)}), "
                         f"{dropped} dropped{kept}")
    return current, f"checked: each of the {n} start-up shape(s) dropped in turn ({_dry_runs(runs)}), {dropped} dropped"


def _dry_runs(n: int) -> str:
    return f"{n} dry run{'' if n == 1 else 's'}"


def _without(workload_ref: str, strategy: str, startup: Sequence[Shape], i: int, distinct: Sequence[Shape],
             options: StrategyOptions) -> Replay:
    """The replay of ``startup`` without its shape ``i`` (latest first: the positions before
    it stay where they were). The dropped shape replays first — the likeliest miss, where the
    dry run stops, since hits change no cache — and a replay that holds is read back in stream
    order, so the plan's covers are listed as recorded."""
    position = {shape_key(s): k for k, s in enumerate(distinct)}
    dropped = startup[i]
    order = [dropped, *(s for s in distinct if shape_key(s) != shape_key(dropped))]
    got = replay(workload_ref, strategy, [s for j, s in enumerate(startup) if j != i], order, options,
                 stop_at_miss=True)
    if not got.holds:
        return got
    return dataclasses.replace(got, after=tuple(sorted(got.after, key=lambda a: position.get(shape_key(a[0]), -1))))


def _limit_needed(frame_entries: int, default: int) -> int | None:
    return frame_entries if frame_entries > default else None


def plan_strategy(workload_ref: str, strategy: str, stream: Sequence[Shape], options: StrategyOptions,
                  max_dry_runs: int = MAX_DRY_RUNS, on_step: StepFn = _silent) -> StrategyPlan | str:
    """One strategy's plan, or why the strategy cannot have one for this workload; ``on_step``
    hears each phase's start."""
    default = limit_in_force(None)
    distinct = distinct_shapes(tuple(stream))
    given = options.recompile_limit
    # plan under the limit asked for, else under one high enough to refuse nothing
    high = max(default, len(distinct) + 1)  # a frame holds at most one entry per distinct shape
    search = options if given is not None else dataclasses.replace(options, recompile_limit=high)
    on_step(strategy, f"dry run of the {len(distinct)} shape(s) of {len(stream)} recorded request(s), "
                      "then of each again")
    found = _recorded_and_checked(workload_ref, strategy, distinct, search)
    if isinstance(found, str):
        return found
    checked, runs = _repaired(workload_ref, strategy, found, distinct, search, on_step)
    on_step(strategy, f"dropping each of {len(checked.startup)} start-up shape(s) in turn")
    final, minimal = _smallest(workload_ref, strategy, checked, distinct, search, max(0, max_dry_runs - runs))
    needed = _limit_needed(final.frame_entries, default) if given is None else given
    if given is None:
        set_options = dataclasses.replace(options, recompile_limit=needed)
    else:
        set_options = options
    covers = tuple(s for s, outcome, _ in final.after if outcome == "hit")
    uncovered = tuple(Uncovered(s, outcome, why) for s, outcome, why in final.after if outcome != "hit")
    return StrategyPlan(
        strategy=strategy, options=set_options, shapes=final.startup, covers=covers, uncovered=uncovered,
        compiles=final.compiles, frame_entries=final.frame_entries,
        recompile_limit=needed, recompile_limit_default=default, minimal=minimal,
    )


def limit_note(p: StrategyPlan) -> str | None:
    """What a plan's recompile limit asks of the service, in one line (None: PyTorch's default holds)."""
    if p.recompile_limit is None or p.forecast_failed:  # no plan, no limit it needs
        return None
    if p.past_limit:
        return (f"{p.strategy}: one frame needs more cache entries than the limit given ({p.recompile_limit}; how "
                "many more the dry run cannot see past it): the shapes past it run eagerly")
    if p.recompile_limit_default is not None and p.frame_entries <= p.recompile_limit_default:
        # a limit given, which PyTorch's default would hold as well: nothing more to set
        return (f"{p.strategy}: one frame holds {p.frame_entries} cache entr{'y' if p.frame_entries == 1 else 'ies'}, "
                f"within the limit given ({p.recompile_limit}) and PyTorch's default ({p.recompile_limit_default}); "
                "the plan's options keep the limit given")
    return (f"{p.strategy}: needs recompile_limit={p.recompile_limit}; PyTorch's default is "
            f"{p.recompile_limit_default} (one frame holds {p.frame_entries} cache entries): set it, as the plan's "
            "options do")


def plan_warmup(
    workload: str,
    stream: str | Sequence[Shape],
    strategies: str | Sequence[str] = DEFAULT_PLAN_STRATEGIES,
    *,
    backend: str = "inductor",
    recompile_limit: int | None = None,
    marks: Sequence[Any] = (),
    max_dry_runs: int = MAX_DRY_RUNS,
    on_begin: Callable[[int], None] | None = None,
    on_step: StepFn = _silent,
) -> WarmupPlan:
    """Plan each strategy's start-up calls for ``stream`` by dry run (seconds, nothing measured;
    ``recommended`` is None until :func:`compilescope.warmup.measure.measure_plan`). Raises a
    :class:`~compilescope.errors.CompilescopeError` on bad input. ``on_begin`` hears how many
    strategies will be planned, ``on_step`` each one's phases and its end."""
    from ..prepare import prepare_run
    from ..forecast.engine import DRY_BACKENDS, dry_note
    from ..forecast.isolation import put_back

    if backend not in DRY_BACKENDS:
        raise OptionError(f"warmup backend {backend!r}: use one of {', '.join(DRY_BACKENDS)}")
    options = StrategyOptions(backend=backend, recompile_limit=recompile_limit, marks=tuple(marks))
    loaded, base, names = prepare_run(workload, stream, strategies, options=options, measure=MeasureOptions(device="cpu"))
    compiled = [n for n in names if get_strategy(n).compiles]
    if not compiled:
        raise OptionError("no compiling strategy to plan (eager compiles nothing: it needs no warm-up)")
    if on_begin is not None:
        on_begin(len(compiled))
    done = []
    with put_back(loaded):  # each dry trial meets the workload's module as a fresh process; put back after
        for n in compiled:
            done.append((n, plan_strategy(base.workload, n, base.stream, options, max_dry_runs, on_step)))
            on_step(n, None)
    plans = tuple(d for _, d in done if isinstance(d, StrategyPlan))
    notes = [f"no plan for {n}: {d}" for n, d in done if isinstance(d, str)]
    if not plans:
        raise OptionError("; ".join(notes))
    notes += [note for note in (limit_note(p) for p in plans) if note]
    if (note := dry_note(backend, DRY_BACKENDS[backend])) is not None:
        notes.append(f"planned by dry run: {note}")
    return WarmupPlan(
        workload=base.workload, stream=_stream_text(stream), requests=len(base.stream), backend=backend,
        plans=plans, torch_version=compat.torch_version(),
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), notes=tuple(notes),
    )


def _stream_text(stream: str | Sequence[Shape]) -> str:
    if isinstance(stream, str):
        return stream
    return f"{len(stream)} shape(s) given in Python"
