"""What a run needs, resolved and checked before its first trial: the workload loaded and
built, the stream parsed, the strategies named, the backend, device, dynamic sources and marks
checked against real inputs — as one :class:`~compilescope.model.TrialSpec` and the strategy
names. Every command that runs a workload (run, advise, sweep, forecast, warmup) starts here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .errors import OptionError, WorkloadError
from .model import DEFAULT_STRATEGIES, MarkSpec, MeasureOptions, Shape, StrategyOptions, TrialSpec, call_arguments
from .options import check_backend, check_device, check_measure, check_sizes, parse_dynamic_sources, parse_strategies
from .strategies import apply_marks
from .stream import check_syntax, parse_stream
from .workload import Workload, bind_arguments, build_target, load_workload, seeded_inputs


def _check_inputs(workload: Workload, target: object, marks: tuple[MarkSpec, ...], shape: Shape) -> None:
    """Make the stream's first inputs and validate ``--mark`` against them now, so a
    ``make_inputs`` that raises or a typo is a one-line error, not N failed trials."""
    args, kwargs = call_arguments(seeded_inputs(workload, shape))
    if not marks:
        return
    import torch

    named = bind_arguments(target, args, kwargs)  # type: ignore[arg-type]
    probe = {k: v.detach().clone() if isinstance(v, torch.Tensor) else v for k, v in named.items()}
    apply_marks(marks, probe)


def prepare_run_with_target(
    workload: str | Workload,
    stream: str | Sequence[Shape] | None = None,
    strategies: str | Sequence[str] = DEFAULT_STRATEGIES,
    *,
    options: StrategyOptions = StrategyOptions(),
    measure: MeasureOptions = MeasureOptions(),
) -> tuple[Workload, Any, TrialSpec, tuple[str, ...]]:
    """:func:`prepare_run`, also returning the target it built (so a caller needing it builds once)."""
    if isinstance(stream, str):
        check_syntax(stream)  # at once, before a workload that takes seconds to load
    if isinstance(workload, Workload):
        if workload.ref is None:
            raise WorkloadError(
                f"workload {workload.name!r} has no reference; pass 'file.py:name' or 'package.module:name' "
                "so each trial can rebuild it in a fresh process"
            )
        loaded = workload
    else:
        loaded = load_workload(workload)
    check_backend(options.backend)
    check_device(measure.device)
    parse_dynamic_sources(options.dynamic_sources)
    check_trial_interpreter(measure.python)
    check_measure(measure)
    target = build_target(loaded)  # a workload that raises while building is the user's error, caught here
    if stream is None:
        shapes = loaded.default_stream
    elif isinstance(stream, str):
        shapes = parse_stream(stream, loaded.dims, loaded.recorded_dims)
    else:
        shapes = tuple(dict(s) for s in stream)
    if not shapes:
        raise OptionError("the stream is empty")
    check_sizes(shapes)
    names = parse_strategies(strategies if isinstance(strategies, str) else ",".join(strategies), options)
    _check_inputs(loaded, target, options.marks, shapes[0])
    if "eager" not in names:
        names = ("eager", *names)  # the baseline every comparison needs
    assert loaded.ref is not None
    spec = TrialSpec(loaded.ref, "eager", "none", tuple(shapes), options, measure)
    return loaded, target, spec, names


def prepare_run(
    workload: str | Workload,
    stream: str | Sequence[Shape] | None = None,
    strategies: str | Sequence[str] = DEFAULT_STRATEGIES,
    *,
    options: StrategyOptions = StrategyOptions(),
    measure: MeasureOptions = MeasureOptions(),
) -> tuple[Workload, TrialSpec, tuple[str, ...]]:
    """Resolve and validate everything a run needs; raises a :class:`CompilescopeError` on bad input."""
    loaded, _, spec, names = prepare_run_with_target(workload, stream, strategies, options=options, measure=measure)
    return loaded, spec, names


def check_trial_interpreter(python: str | None) -> None:
    """``--python PATH``: that interpreter imports torch and this compilescope (one line
    otherwise), and its torch, outside the checked range, is said once."""
    if python is None:
        return
    import sys

    from .execute.interpreter import check_interpreter, interpreter_note

    note = interpreter_note(check_interpreter(python))
    if note is not None and python not in _NOTED:
        _NOTED.add(python)
        print(f"compilescope: {note}", file=sys.stderr)


_NOTED: set[str] = set()
