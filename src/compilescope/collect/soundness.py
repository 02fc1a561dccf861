"""Is a guard filter sound on this code? Change what it stopped guarding and see.

A ``guard_filter_fn`` (``torch.compiler.skip_guard_on_all_nn_modules_unsafe``…) tells Dynamo
not to keep some guards; the compiled code then assumes what they checked never changes. The
guard-filter strategies record every guard their filter dropped
(:func:`compilescope.compat.recording_guard_filter`); after the trial's numerics,
:func:`soundness_checks` builds one change per kind of dropped guard it can make — a module's
Python attribute, a global the code reads, a parameter's ``requires_grad``, the grad mode the
call runs under — and, on one shape, compares the compiled call with eager after the change:

* eager's output did not change → the change tells nothing (``eager_changed`` False);
* the compiled output still matches eager's → sound for this change (it may have compiled
  again: its remaining guards saw the change);
* it does not → **stale**: the compiled code kept serving the old result.

Every change is undone after its check. A change is written as the user would write it
(``model.layers[0].scale = 1.5``), with ``model`` the compiled module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from .. import compat
from ..model import Shape, SoundnessCheck
from ..torchtext import readable

MAX_TRIES = 4  # candidates of one kind tried until one changes eager's output
SCALAR_KINDS = ("CONSTANT_MATCH", "EQUALS_MATCH", "ID_MATCH")
_LAST = re.compile(r"^(?P<owner>.+?)(?:\.(?P<attr>[A-Za-z_]\w*)|\[(['\"])(?P<key>[^'\"]+)\3\])$")


@dataclass(frozen=True)
class Change:
    """A change to make before the check, and its undo; ``scope`` wraps the calls after it
    (the grad-mode change); ``text`` is it as code."""

    kind: str
    guard: str
    text: str
    apply: Callable[[], None]
    undo: Callable[[], None]
    scope: Callable[[], AbstractContextManager[Any]] = nullcontext


def _changed(value: Any) -> tuple[Any, ...]:
    """Other values of the same kind that a guard on ``value`` would reject: a smaller one
    first (a threshold such as a clamp bites when lowered), then a larger one."""
    if isinstance(value, bool):
        return (not value,)
    if isinstance(value, int):
        return (value - 1, value + 1)
    if isinstance(value, float):
        return (value / 4 - 1, value * 2 + 1)
    return ()


def _setter(owner: Any, attr: str | None, key: str | None) -> Callable[[Any], None]:
    if attr is not None:
        return lambda v: setattr(owner, attr, v)
    return lambda v: owner.__setitem__(key, v)


def _as_code(source: str, inputs: dict[str, Any]) -> str:
    """``L['self']._modules['layers']._modules['0'].scale`` → ``model.layers[0].scale``."""
    import torch

    text = readable(source)
    for name, value in inputs.items():
        if isinstance(value, torch.nn.Module) and (text == name or text.startswith((name + ".", name + "["))):
            return "model" + text[len(name):]
    return text


def _value_changes(guard: compat.DroppedGuard, frame: compat.FrameCall) -> list[Change]:
    """Changes of the Python value a dropped guard held (a module attribute, a global)."""
    values = _changed(guard.value)
    if not values or guard.kind not in SCALAR_KINDS:
        return []
    source = compat.local_scope_name(guard.name)
    m = _LAST.match(source)
    if m is None:
        return []
    try:
        owner = eval(m["owner"], {"L": frame.inputs, "G": frame.globals})  # noqa: S307 - Dynamo's own source text
        old = getattr(owner, m["attr"]) if m["attr"] is not None else owner[m["key"]]
    except Exception:  # noqa: BLE001 - a source this frame cannot resolve: no change from it
        return []
    if type(old) is not type(guard.value) or old != guard.value:
        return []
    put = _setter(owner, m["attr"], m["key"])
    kind = "global" if guard.is_global else "module_attribute"
    return [Change(kind, f"{guard.kind} on {readable(source)}", f"{_as_code(source, frame.inputs)} = {new!r}",
                   lambda new=new: put(new), lambda: put(old)) for new in values]


def _requires_grad_change(guard: compat.DroppedGuard, frame: compat.FrameCall) -> Change | None:
    import torch

    p = guard.value
    if guard.kind != "TENSOR_MATCH" or not isinstance(p, torch.nn.Parameter):
        return None
    before = p.requires_grad
    source = _as_code(compat.local_scope_name(guard.name), frame.inputs)
    return Change("requires_grad", f"TENSOR_MATCH on {readable(compat.local_scope_name(guard.name))}",
                  f"{source}.requires_grad_({not before})", lambda: p.requires_grad_(not before),
                  lambda: p.requires_grad_(before))


def _grad_mode_change(guard: compat.DroppedGuard) -> Change | None:
    import torch

    if guard.kind not in ("GLOBAL_STATE", "GRAD_MODE"):
        return None
    flipped = not torch.is_grad_enabled()
    return Change("grad_mode", guard.kind, f"torch.set_grad_enabled({flipped})  # around the call",
                  lambda: None, lambda: None, lambda: torch.set_grad_enabled(flipped))


def changes(dropped: Sequence[compat.DroppedGuard], frame: compat.FrameCall) -> dict[str, list[Change]]:
    """Candidate changes by kind, in the order the filter dropped their guards (a kind's first
    few are tried until one changes eager's output)."""
    out: dict[str, list[Change]] = {}
    seen: set[str] = set()
    for guard in dropped:
        made = [*_value_changes(guard, frame), _requires_grad_change(guard, frame), _grad_mode_change(guard)]
        for change in made:
            if change is not None and change.text not in seen and len(out.get(change.kind, [])) < MAX_TRIES:
                seen.add(change.text)
                out.setdefault(change.kind, []).append(change)
    return out


def _leaves(value: Any) -> Iterator[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)


def _difference(expected: Any, actual: Any) -> tuple[bool, float | None, str | None]:
    """(same, max abs err, what differs) of two outputs: values within float32's tolerance,
    and each tensor's requires_grad."""
    import torch

    a, b = list(_leaves(expected)), list(_leaves(actual))
    if len(a) != len(b):
        return False, None, f"{len(a)} against {len(b)} output tensors"
    err, nans = 0.0, 0
    for x, y in zip(a, b):
        if x.shape != y.shape:
            return False, None, f"shape {tuple(x.shape)} against {tuple(y.shape)}"
        if x.requires_grad != y.requires_grad:
            return False, None, f"requires_grad {x.requires_grad} (eager) against {y.requires_grad} (compiled)"
        if x.numel():
            dx, dy = x.detach().double(), y.detach().double()
            nans += int((dx.isnan() != dy.isnan()).sum())  # NaN on one side: no number measures it (max() drops NaN)
            both = ~(dx.isnan() | dy.isnan())
            if both.any():
                err = max(err, float((dx[both] - dy[both]).abs().max()))
    same = all(torch.allclose(x.detach(), y.detach(), atol=1e-4, rtol=1e-4, equal_nan=True) for x, y in zip(a, b))
    if nans:
        return same, None, f"NaN in {nans} element(s) on one side only"
    return same, err, None


def check(change: Change, shape: Shape, compiled: Callable[[], Any], eager: Callable[[], Any]) -> SoundnessCheck:
    """The compiled call against eager after ``change`` (undone after); eager before it, as the
    calls ran until then, says whether the change changes anything. A check that cannot be
    made (eager raised, the change could not be applied) is recorded as not told, never raised."""
    try:
        return _check(change, shape, compiled, eager)
    except Exception as exc:  # noqa: BLE001 - a finished trial keeps its results
        return SoundnessCheck(change.text, change.kind, change.guard, shape, None, None,
                              detail=f"not told: {type(exc).__name__}: {str(exc)[:200]}")


def _check(change: Change, shape: Shape, compiled: Callable[[], Any], eager: Callable[[], Any]) -> SoundnessCheck:
    before = eager()
    unbound = compat.enable_compilation_metrics()  # a full deque (64 by default) would hide the recompile
    try:
        change.apply()
        with change.scope():
            count = compat.compilation_metrics_count()
            after = eager()
            try:
                got = compiled()
            except Exception as exc:  # noqa: BLE001 - a compiled call that raises where eager did not is stale
                return SoundnessCheck(change.text, change.kind, change.guard, shape, True, True,
                                      detail=f"the compiled call raised {type(exc).__name__}: {str(exc)[:200]}")
            recompiled = compat.compilation_metrics_count() != count
    finally:
        change.undo()
        unbound()
    moved, _, _ = _difference(before, after)
    same, err, what = _difference(after, got)
    return SoundnessCheck(change.text, change.kind, change.guard, shape, not moved, not same, err, what, recompiled)


def soundness_checks(dropped: Sequence[compat.DroppedGuard], shape: Shape, compiled: Callable[[], Any],
                     eager: Callable[[], Any]) -> list[SoundnessCheck]:
    """One check per kind of change the dropped guards allow: a kind's candidates are tried
    until one changes eager's output (then its verdict stands)."""
    if not dropped:
        return []
    try:
        _, frames = compat.compiled_frame_calls(compiled)
    except Exception as exc:  # noqa: BLE001
        return [SoundnessCheck("—", "none", "", shape, None, None, detail=f"the call raised {type(exc).__name__}")]
    if not frames:
        return [SoundnessCheck("—", "none", "", shape, None, None, detail="no compiled frame ran")]
    out = []
    for kind, candidates in changes(dropped, frames[0]).items():
        result = None
        for change in candidates:
            result = check(change, shape, compiled, eager)
            if result.eager_changed:
                break
        if result is not None:
            out.append(result)
    return out
