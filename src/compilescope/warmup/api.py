"""Use a warm-up plan in a service: :func:`warm_up` calls the plan's start-up shapes through
an already-compiled callable and says what each cost.

    compiled = torch.compile(model, backend="inductor")
    with compilescope.warm_up(compiled, "plan.json", make_inputs, strict=True) as warmed:
        print(warmed.seconds, warmed.compiles)
        serve(compiled)  # a covered shape compiling again raises when the block ends

``make_inputs(shape)`` builds one request's inputs from a plan shape (a dict such as
``{"batch": 4, "seq": 32}``), by the one rule a :class:`~compilescope.Workload`'s
``make_inputs`` follows (:func:`compilescope.analysis.outcomes.call_arguments`): a ``dict``
is keyword arguments; a pair ``(tuple, dict)`` is positional and keyword arguments; any
other tuple or list is the positional arguments; anything else is the one positional argument.

Compiles are counted as everywhere in compilescope (:mod:`compilescope.analysis.counts`,
through :func:`compilescope.watch`'s capture): a refusal at the recompile limit is not a
compile, and a shape *hits* when its call's outcome
(:func:`compilescope.analysis.outcomes.classify`) is a hit: it neither compiled nor was refused.

``strict=True`` keeps a watch installed after the warm-up with the plan as its budget: zero
compiles for the shapes the plan covers. A later compile of a covered shape (the same
tensors' sizes, dtypes and scalars a covered shape's inputs have) is a budget overrun,
raised as :class:`~compilescope.watch.RecompileBudgetExceeded` with the guards that failed
when the scope ends (``result.close()``, the ``with`` block's end) or at
``result.check()`` — never inside PyTorch's compile. A compile of a shape the plan does not
cover is reported (``result.uncovered``), not raised: the plan never promised it. As every
watch, it sees the compiles of the warmed callable made in the thread that called
:func:`warm_up`; other compiled functions' compiles are not its budget.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import compat
from ..analysis.counts import count_compiles
from ..analysis.outcomes import RequestOutcome, call_arguments, classify, limit_in_force
from ..errors import OptionError
from ..model import CompileRecord, Shape, shape_label
from ..watch import Watch, compile_lines, deliver_pending
from ..model import StrategyPlan, WarmupPlan
from .planfile import load_plan

MakeInputs = Callable[[Shape], Any]


@dataclass(frozen=True)
class WarmedShape:
    """One start-up call: its wall seconds, the frame compiles it made, its outcome."""

    shape: Shape
    seconds: float
    compiles: int
    refused: int
    compile_ids: tuple[str, ...]
    outcome: RequestOutcome = RequestOutcome.HIT

    @property
    def hit(self) -> bool:
        return self.outcome is RequestOutcome.HIT


def _resolve(plan: WarmupPlan | StrategyPlan, strategy: str | None) -> StrategyPlan:
    if isinstance(plan, StrategyPlan):
        if strategy is not None and strategy != plan.strategy:
            raise OptionError(f"warm_up: the plan is {plan.strategy!r}'s, not {strategy!r}'s")
        return plan
    if not isinstance(plan, WarmupPlan):
        raise OptionError(f"warm_up: plan is a {type(plan).__name__}; pass a WarmupPlan, a StrategyPlan or a plan file")
    return plan.plan(strategy)


def _read(plan: Any) -> tuple[Any, Path | None]:
    """The plan, read once when it is a plan file's path, with that file's folder (else None)."""
    if isinstance(plan, (str, Path)):
        return load_plan(plan), Path(plan).parent
    return plan, None


def _inside(path: Path, folder: Path) -> bool:
    """``path``, every link followed, lies in ``folder`` (also followed)."""
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(folder))
    except ValueError:
        return False
    return True


def _artifacts_file(plan: Any, folder: Path | None, sp: StrategyPlan,
                    artifacts: bytes | str | Path | None) -> bytes | Path | None:
    """The artifacts to load: the bytes or file given, ``<strategy>.bin`` in a folder given,
    or — none given and a plan file (read from ``folder``) naming its artifacts folder — that
    folder's file for the strategy when it has one (``compilescope warmup --artifacts`` writes
    them so). A plan file's artifacts are loaded only from inside the plan file's own folder:
    loading cache artifacts unpickles them, so a plan naming an absolute path, a ``..`` or a
    link out of its folder is refused (``artifacts=`` loads a file the caller chose)."""
    from ..execute.scheduler import cache_key

    if isinstance(artifacts, bytes):
        return artifacts
    if artifacts is None:
        if folder is None or not isinstance(plan, WarmupPlan) or not plan.artifacts:
            return None
        found = folder / plan.artifacts / f"{cache_key(sp.strategy)}.bin"
        if os.path.isabs(plan.artifacts) or not _inside(found, folder):
            raise OptionError(f"the plan names artifacts outside its own folder ({plan.artifacts!r}): not loaded — "
                              "loading cache artifacts unpickles them; keep them beside the plan, or pass "
                              "artifacts= a file you trust")
        return found if found.is_file() else None
    folder = Path(artifacts)
    return folder / f"{cache_key(sp.strategy)}.bin" if folder.is_dir() else folder


def _check_origin(plan: Any, workload: str | None, loads_artifacts: bool) -> None:
    """A plan made for another workload is refused; one made under another torch is refused
    when artifacts would be loaded (a cache from another version), else warned about."""
    if not isinstance(plan, WarmupPlan):
        return
    if workload is not None and plan.workload and workload != plan.workload:
        raise OptionError(f"warm_up: the plan was made for workload {plan.workload!r}, not {workload!r}")
    made, here = plan.torch_version, compat.torch_version()
    if not made or made == here:
        return
    if loads_artifacts:
        raise OptionError(f"warm_up: the plan and its artifacts were made under torch {made}; this is torch {here}: "
                          "cache artifacts of another torch are not loaded (make the plan again here)")
    warnings.warn(f"compilescope.warm_up: the plan was made under torch {made}; this is torch {here}: its shapes "
                  "and recompile limit were forecast for that version", RuntimeWarning, stacklevel=3)


def _load_artifacts(artifacts: bytes | Path | None) -> float | None:
    if artifacts is None:
        return None
    if not isinstance(artifacts, bytes):
        from ..paths import read_capped

        artifacts = read_capped(artifacts, f"artifacts {str(artifacts)!r}", OptionError, limit=1 << 31)
    started = time.perf_counter()
    compat.load_cache_artifacts(artifacts)
    return time.perf_counter() - started


def check_limit(sp: StrategyPlan, in_force: int, set_limit: bool) -> str:
    """A one-line error when the limit in force is below what the plan needs; with
    ``set_limit`` it is set instead, and what was done is returned."""
    need = sp.recompile_limit
    if need is None or in_force >= need:
        return ""
    if not set_limit:
        raise OptionError(f"the {sp.strategy} warm-up plan needs recompile_limit {need}; the limit in force is "
                          f"{in_force}: set torch._dynamo.config.recompile_limit = {need} or pass set_limit=True")
    compat.set_recompile_limit(need)
    return f"set torch._dynamo.config.recompile_limit from {in_force} to {need}, as the plan needs"


def _target(fn: Any) -> Any:
    """What a compiled callable runs, as a compiled call's frame names it."""
    inner = compat.compiled_module_inner(fn)
    return inner if inner is not None else compat.uncompiled_callable(fn)


class PlanWatch(Watch):
    """A watch whose budget is the plan: each compile is attributed to the latest call of the
    warmed callable in this thread, by that call's signature
    (:func:`compilescope.shapes_record.call_signature`); a covered signature's compile is
    over budget, any other is reported in :attr:`uncovered`."""

    def __init__(self, fn: Any, target: Any, covered: dict[str, Shape], action: str = "raise") -> None:
        super().__init__(functions=[fn], action=action)
        from ..shapes_record import function_params

        self.target, self.covered = target, covered
        self.params = function_params(target)
        self.violations: list[tuple[Shape, CompileRecord]] = []
        self.uncovered: list[CompileRecord] = []
        self._current: str | None = None

    def on_call(self, frame: Any) -> None:  # the shape-recording hub's per-call hook
        if threading.get_ident() != self._thread:
            return
        try:
            fn, args, kwargs = compat.compiled_call_arguments(frame)
            if compat.compiled_callable_target(fn) is self.target:
                from ..shapes_record import call_signature

                self._current = call_signature(self.params, args, kwargs)
        except Exception:  # never break the user's call
            self._current = None

    def _take(self, records: Any, breaks: Any, owners: set[int]) -> None:
        records = list(records)
        super()._take(records, breaks, owners)
        for r in (r for r in records if self._matches(r, owners)):  # the warmed callable's compiles only
            shape = self.covered.get(self._current) if self._current is not None else None
            if shape is not None:  # every record is a compile or a refusal: each one is over budget
                self.violations.append((shape, r))
            else:
                self.uncovered.append(r)

    def start_plan(self) -> PlanWatch:
        from ..shapes_record import HUB

        self.__enter__()
        HUB.add(self)  # type: ignore[arg-type]  # the hub calls only on_call
        return self

    def stop_plan(self) -> bool:
        """End the watch; False when it had ended."""
        from ..shapes_record import HUB

        if not self._active:
            return False
        HUB.remove(self)  # type: ignore[arg-type]
        self.stop()
        return True

    def over_budget(self) -> list[str]:
        n = len(self.violations)
        return [f"{n} compile(s) of shapes the warm-up plan covers exceed its budget of 0"] if n else []

    def explain(self, problems: list[str] | None = None) -> str:
        problems = problems if problems is not None else self.over_budget()
        lines = [f"compilescope.warm_up(strict=True): {'; '.join(problems) or 'within budget'}"]
        for shape, r in self.violations:
            lines.append(f"  covered shape {shape_label(shape)}:")
            lines += ["  " + line for line in compile_lines([r])]
        if self.uncovered:
            lines.append(f"  {len(self.uncovered)} compile(s) of shapes the plan does not cover (reported, not raised)")
        return "\n".join(lines)


class WarmUpResult:
    """What :func:`warm_up` did: per shape its cost; with ``strict``, the live plan watch
    (``close()`` or the ``with`` block's end ends it and raises if a covered shape compiled)."""

    def __init__(self, sp: StrategyPlan, shapes: list[WarmedShape], limit: int, limit_note: str,
                 artifacts_load_s: float | None, strict: PlanWatch | None) -> None:
        self.strategy, self.plan, self.shapes = sp.strategy, sp, tuple(shapes)
        self.recompile_limit, self.limit_note = limit, limit_note
        self.artifacts_load_s, self._watch = artifacts_load_s, strict
        self.strict = strict is not None
        self._reported = 0  # violations a check already raised or warned about

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.shapes)

    @property
    def compiles(self) -> int:
        return sum(s.compiles for s in self.shapes)

    @property
    def violations(self) -> tuple[tuple[Shape, CompileRecord], ...]:
        """Compiles after the warm-up of shapes the plan covers, each with its shape (strict only)."""
        deliver_pending()
        return tuple(self._watch.violations) if self._watch is not None else ()

    @property
    def uncovered(self) -> tuple[CompileRecord, ...]:
        """Compiles after the warm-up of shapes the plan does not cover (strict only): reported."""
        deliver_pending()
        return tuple(self._watch.uncovered) if self._watch is not None else ()

    def check(self) -> None:
        """Raise (or warn) now if a covered shape has compiled since the warm-up (or since the
        last check that said so: each compile is reported once)."""
        if self._watch is not None:
            deliver_pending()
            try:
                self._watch.check()
            finally:
                self._reported = len(self._watch.violations)

    def close(self) -> None:
        """End the strict watch; raises as :meth:`check` does, for what no check reported yet."""
        if self._watch is not None and self._watch.stop_plan() and len(self._watch.violations) > self._reported:
            self._watch.check()

    def __enter__(self) -> WarmUpResult:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.close()
        elif self._watch is not None:
            self._watch.stop_plan()

    def __repr__(self) -> str:
        return (f"WarmUpResult({self.strategy!r}: {len(self.shapes)} shape(s), {self.compiles} compile(s), "
                f"{self.seconds:.3f} s{', strict' if self.strict else ''})")


def _inputs(make_inputs: MakeInputs, shape: Shape, workload: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    made = f" (the plan is for workload {workload!r})" if workload else ""
    try:
        inputs = make_inputs(dict(shape))
    except Exception as exc:
        raise OptionError(f"make_inputs({dict(shape)}) raised {type(exc).__name__}: {exc}{made}"[:300]) from exc
    wrong = _not_inputs(inputs)
    if wrong:
        raise OptionError(f"make_inputs({dict(shape)}) returned {wrong}: return the call's inputs — a tensor, a "
                          f"tuple or list of arguments, a dict of keyword arguments, or (args, kwargs){made}"[:300])
    return call_arguments(inputs)


def _not_inputs(inputs: Any) -> str:
    """What is wrong with ``make_inputs``'s value ("" when it is inputs): nothing returned, a
    bare number or string (a size where a tensor was meant), or a generator, which would be
    passed as one argument and never run."""
    import types

    if inputs is None:
        return "None"
    if isinstance(inputs, (bool, int, float, complex, str, bytes)):
        kind = type(inputs).__name__
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} ({repr(inputs)[:40]})"
    if isinstance(inputs, (types.GeneratorType, map, filter, zip, range)) or (
            hasattr(inputs, "__next__") and hasattr(inputs, "__iter__")):
        return f"a {type(inputs).__name__} (an iterator: make it a tuple or list)"
    return ""


def _call(fn: Any, make_inputs: MakeInputs, shape: Shape, watch: Watch, workload: str = "") -> WarmedShape:
    args, kwargs = _inputs(make_inputs, shape, workload)
    seen = len(watch.records)
    started = time.perf_counter()
    fn(*args, **kwargs)
    seconds = time.perf_counter() - started
    deliver_pending()
    mine = watch.records[seen:]
    counts = count_compiles(mine)
    return WarmedShape(dict(shape), seconds, counts.compiles, counts.refused,
                       tuple(str(r.compile_id) for r in mine if r.is_compile), classify(mine))


def _covered(fn: Any, sp: StrategyPlan, make_inputs: MakeInputs, workload: str = "") -> dict[str, Shape]:
    """The signature of each covered shape's inputs (the plan's own shapes when it lists no
    covers), as :class:`PlanWatch` tells calls apart."""
    from ..shapes_record import call_signature, function_params

    params = function_params(_target(fn))
    out: dict[str, Shape] = {}
    for shape in (*sp.shapes, *sp.covers):
        if any(shape == u.shape for u in sp.uncovered):
            continue
        args, kwargs = _inputs(make_inputs, shape, workload)
        out.setdefault(call_signature(params, args, kwargs), dict(shape))
    return out


def warm_up(fn: Callable[..., Any], plan: WarmupPlan | StrategyPlan | str | Path, make_inputs: MakeInputs, *,
            strategy: str | None = None, artifacts: bytes | str | Path | None = None, strict: bool = False,
            set_limit: bool = False, recompile_limit: int | None = None, action: str = "raise",
            workload: str | None = None) -> WarmUpResult:
    """Call ``plan``'s start-up shapes, in order, through the already-compiled ``fn``.

    ``plan``: a :class:`WarmupPlan` (its ``strategy`` plan, else the recommended one), one
    :class:`StrategyPlan`, or a plan file's path. ``fn`` must be compiled as that strategy
    says (``plan.options``); the plan cannot check it. ``artifacts``: mega-cache bytes, a
    file of them or a folder of ``<strategy>.bin`` files, loaded before the first call (a
    plan file naming its artifacts folder loads its strategy's file when none is given). ``recompile_limit``: the limit ``fn`` was
    compiled with when given to ``torch.compile(recompile_limit=…)`` (default:
    ``torch._dynamo.config.recompile_limit``); below the plan's, a one-line
    :class:`~compilescope.errors.OptionError`, unless ``set_limit`` sets the config (said in
    ``result.limit_note``). ``strict``/``action``: see the module docstring. ``workload``:
    the workload this service runs, refused when the plan was made for another. A plan made
    under another torch is warned about, and its artifacts are not loaded (refused)."""
    plan, folder = _read(plan)
    sp = _resolve(plan, strategy)
    if action not in ("raise", "warn"):
        raise OptionError(f"warm_up(action={action!r}): use 'raise' or 'warn'")
    if recompile_limit is not None and (not isinstance(recompile_limit, int) or isinstance(recompile_limit, bool)
                                        or recompile_limit < 1):
        raise OptionError(f"warm_up(recompile_limit={recompile_limit!r}): a limit is a whole number of at least 1")
    if not callable(make_inputs):
        raise OptionError(f"warm_up: make_inputs is a {type(make_inputs).__name__}, not a function of a shape")
    chosen = _artifacts_file(plan, folder, sp, artifacts)
    _check_origin(plan, workload, chosen is not None)
    in_force = limit_in_force(recompile_limit)
    note = check_limit(sp, in_force, set_limit and recompile_limit is None)
    load_s = _load_artifacts(chosen)
    workload = plan.workload if isinstance(plan, WarmupPlan) else ""  # named when make_inputs fails
    covered = _covered(fn, sp, make_inputs, workload) if strict else {}
    counting = Watch()
    with counting:
        shapes = [_call(fn, make_inputs, shape, counting, workload) for shape in sp.shapes]
    watch = PlanWatch(fn, _target(fn), covered, action).start_plan() if strict else None
    limit = sp.recompile_limit if note else in_force
    return WarmUpResult(sp, shapes, limit, note, load_s, watch)
