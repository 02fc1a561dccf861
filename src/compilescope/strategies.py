"""Compile strategies: one registry entry each, turning a built workload into a callable.

The runner knows nothing of individual strategies; a new strategy is one
:func:`register` call. A strategy may declare itself unavailable for a workload or for the
installed torch (with a reason), which the runner records instead of failing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from . import compat
from .errors import StrategyError
from .model import MarkSpec, StrategyOptions

BeforeCall = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True)
class Prepared:
    """A strategy applied to a target: the callable to run and a hook run before each call
    with the call's named arguments (e.g. to ``mark_dynamic`` them)."""

    fn: Callable[..., Any]
    before_call: BeforeCall | None = None


@dataclass(frozen=True)
class Strategy:
    name: str
    description: str
    compiles: bool
    prepare: Callable[[Callable[..., Any], StrategyOptions], Prepared]
    validate: Callable[[StrategyOptions], None] | None = None
    unavailable: Callable[[Callable[..., Any], StrategyOptions], str | None] | None = None


_REGISTRY: dict[str, Strategy] = {}


def register(strategy: Strategy) -> Strategy:
    if strategy.name in _REGISTRY:
        raise ValueError(f"strategy {strategy.name!r} is already registered")
    _REGISTRY[strategy.name] = strategy
    return strategy


def strategy_names() -> list[str]:
    return list(_REGISTRY)


def get_strategy(name: str) -> Strategy:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise StrategyError(f"unknown strategy {name!r} (known: {', '.join(_REGISTRY)})") from None


def parse_strategies(text: str, options: StrategyOptions) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise StrategyError("no strategy given")
    for name in names:
        strategy = get_strategy(name)
        if strategy.validate is not None:
            strategy.validate(options)
    return names


def parse_mark(text: str) -> MarkSpec:
    """``x:0`` or ``x:0:1:1024`` (``x:0::1024`` leaves the minimum open)."""
    parts = text.split(":")
    if len(parts) not in (2, 4) or not parts[0].strip():
        raise StrategyError(f"malformed --mark {text!r}: expected INPUT:DIM or INPUT:DIM:MIN:MAX")

    def num(token: str, what: str, optional: bool) -> int | None:
        if optional and token == "":
            return None
        try:
            value = int(token)
        except ValueError:
            raise StrategyError(f"malformed --mark {text!r}: {what} {token!r} is not an integer") from None
        if value < 0:
            raise StrategyError(f"malformed --mark {text!r}: {what} must be >= 0")
        return value

    dim = num(parts[1], "dim", optional=False)
    assert dim is not None
    lo = hi = None
    if len(parts) == 4:
        lo, hi = num(parts[2], "min", True), num(parts[3], "max", True)
        if lo is not None and hi is not None and lo > hi:
            raise StrategyError(f"malformed --mark {text!r}: min {lo} is above max {hi}")
    return MarkSpec(input=parts[0].strip(), dim=dim, min=lo, max=hi)


def compile_kwargs(options: StrategyOptions) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"backend": options.backend}
    if options.mode is not None:
        kwargs["mode"] = options.mode
    return kwargs


def _validate_compile(options: StrategyOptions) -> None:
    if options.mode is not None and options.backend != "inductor":
        raise StrategyError(f"--mode {options.mode!r} only applies to the inductor backend, not {options.backend!r}")


def _compiled(dynamic: bool | None) -> Callable[[Callable[..., Any], StrategyOptions], Prepared]:
    def prepare(target: Callable[..., Any], options: StrategyOptions) -> Prepared:
        return Prepared(torch.compile(target, dynamic=dynamic, **compile_kwargs(options)))

    return prepare


def apply_marks(marks: tuple[MarkSpec, ...], arguments: Mapping[str, Any]) -> None:
    for mark in marks:
        value = arguments.get(mark.input)
        if not isinstance(value, torch.Tensor):
            raise StrategyError(f"--mark {mark}: the workload has no tensor input named {mark.input!r}")
        if mark.dim >= value.dim():
            raise StrategyError(f"--mark {mark}: input {mark.input!r} has {value.dim()} dimension(s)")
        compat.mark_dynamic(value, mark.dim, min=mark.min, max=mark.max)


def _prepare_mark_dynamic(target: Callable[..., Any], options: StrategyOptions) -> Prepared:
    marks = options.marks
    return Prepared(
        torch.compile(target, **compile_kwargs(options)),
        before_call=lambda arguments: apply_marks(marks, arguments),
    )


def _validate_mark_dynamic(options: StrategyOptions) -> None:
    _validate_compile(options)
    if not options.marks:
        raise StrategyError("strategy 'mark-dynamic' needs --mark INPUT:DIM[:MIN:MAX] (e.g. --mark x:0)")


register(Strategy("eager", "no compilation: the baseline", compiles=False, prepare=lambda t, o: Prepared(t)))
register(
    Strategy(
        "default",
        "torch.compile(dynamic=None): static first, automatic dynamic after a size change",
        compiles=True,
        prepare=_compiled(None),
        validate=_validate_compile,
    )
)
register(
    Strategy(
        "static",
        "torch.compile(dynamic=False): one graph per distinct shape",
        compiles=True,
        prepare=_compiled(False),
        validate=_validate_compile,
    )
)
register(
    Strategy(
        "dynamic",
        "torch.compile(dynamic=True): symbolic sizes from the first compile",
        compiles=True,
        prepare=_compiled(True),
        validate=_validate_compile,
    )
)
register(
    Strategy(
        "mark-dynamic",
        "torch.compile + torch._dynamo.mark_dynamic(input, dim, min, max) before each call",
        compiles=True,
        prepare=_prepare_mark_dynamic,
        validate=_validate_mark_dynamic,
    )
)
