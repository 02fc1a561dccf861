"""The Python entry point: :func:`run` a workload over a stream under strategies."""

from __future__ import annotations

import datetime as _dt
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import StrategyError, WorkloadError
from .execute.local import ProgressFn, parse_cache_modes, plan_trials, run_planned
from .model import MarkSpec, MeasureOptions, RunResult, Shape, StrategyOptions, TrialSpec
from .strategies import apply_marks, parse_strategies
from .stream import parse_stream
from .workload import Workload, as_call_args, bind_arguments, build_target, load_workload, seeded_inputs

DEFAULT_STRATEGIES = ("eager", "default", "static", "dynamic")
DEFAULT_TIMEOUT_S = 900.0
MARK_STRATEGIES = ("mark-dynamic", "shapes-spec")


def _check_marks(workload: Workload, target: object, marks: tuple[MarkSpec, ...], shape: Shape) -> None:
    """Validate ``--mark`` against real inputs now, so a typo is a one-line error, not N failed trials."""
    if not marks:
        return
    import torch

    args, kwargs = as_call_args(seeded_inputs(workload, shape))
    named = bind_arguments(target, args, kwargs)  # type: ignore[arg-type]
    probe = {k: v.detach().clone() if isinstance(v, torch.Tensor) else v for k, v in named.items()}
    apply_marks(marks, probe)


def prepare_run(
    workload: str | Workload,
    stream: str | Sequence[Shape] | None = None,
    strategies: str | Sequence[str] = DEFAULT_STRATEGIES,
    *,
    options: StrategyOptions = StrategyOptions(),
    measure: MeasureOptions = MeasureOptions(),
) -> tuple[Workload, TrialSpec, tuple[str, ...]]:
    """Resolve and validate everything a run needs; raises a :class:`CompilescopeError` on bad input."""
    if isinstance(workload, Workload):
        if workload.ref is None:
            raise WorkloadError(
                f"workload {workload.name!r} has no reference; pass 'file.py:name' or 'package.module:name' "
                "so each trial can rebuild it in a fresh process"
            )
        loaded = workload
    else:
        loaded = load_workload(workload)
    target = build_target(loaded)  # a workload that raises while building is the user's error, caught here
    if stream is None:
        shapes = loaded.default_stream
    elif isinstance(stream, str):
        shapes = parse_stream(stream, loaded.dims)
    else:
        shapes = tuple(dict(s) for s in stream)
    names = parse_strategies(strategies if isinstance(strategies, str) else ",".join(strategies), options)
    if any(n in MARK_STRATEGIES for n in names):
        _check_marks(loaded, target, options.marks, shapes[0])
    elif options.marks:
        raise StrategyError(f"--mark only applies to the {' and '.join(MARK_STRATEGIES)} strategies")
    if options.dynamic_sources and "dynamic-sources" not in names:
        raise StrategyError("--dynamic-sources only applies to the dynamic-sources strategy")
    if "eager" not in names:
        names = ("eager", *names)  # the baseline every comparison needs
    assert loaded.ref is not None
    spec = TrialSpec(loaded.ref, "eager", "none", tuple(shapes), options, measure)
    return loaded, spec, names


def run(
    workload: str | Workload,
    stream: str | Sequence[Shape] | None = None,
    strategies: str | Sequence[str] = DEFAULT_STRATEGIES,
    *,
    cache: str = "cold",
    backend: str = "inductor",
    mode: str | None = None,
    marks: Sequence[MarkSpec] = (),
    recompile_limit: int | None = None,
    dynamic_sources: str | None = None,
    block: str | None = None,
    buckets: Sequence[int] = (),
    measure: MeasureOptions = MeasureOptions(),
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_progress: ProgressFn | None = None,
    command: str = "",
    lifetime: int | None = None,
) -> RunResult:
    """Run ``workload`` over ``stream`` under each strategy, one fresh process per trial.

    ``workload`` is a reference (``file.py:name``, ``package.module:name``, a built-in name)
    or a :class:`Workload` loaded from one. ``stream`` is a spec string (see
    :mod:`compilescope.stream`), a sequence of shape dicts, or ``None`` for the workload's
    default. The eager baseline is always included.
    """
    parse_cache_modes(cache)
    options = StrategyOptions(
        backend=backend, mode=mode, marks=tuple(marks), recompile_limit=recompile_limit,
        dynamic_sources=dynamic_sources, block=block, buckets=tuple(buckets),
    )
    _, base, names = prepare_run(workload, stream, strategies, options=options, measure=measure)
    return execute_run(
        base, names, cache, timeout_s=timeout_s, on_progress=on_progress, command=command, lifetime=lifetime
    )


def execute_run(
    base: TrialSpec,
    names: Sequence[str],
    cache: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_progress: ProgressFn | None = None,
    command: str = "",
    lifetime: int | None = None,
) -> RunResult:
    """Run a validated plan (see :func:`prepare_run`): one fresh process per trial."""
    with tempfile.TemporaryDirectory(prefix="compilescope-cache-") as cache_root:
        plan = plan_trials(base, names, cache, Path(cache_root))
        trials = run_planned(plan, timeout_s, on_progress)
    return RunResult(
        workload=base.workload,
        stream=base.stream,
        trials=tuple(trials),
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        command=command,
        lifetime=lifetime,
    )
