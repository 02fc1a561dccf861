"""Workloads: what to compile, how to make inputs for a shape, and a default stream.

A workload is built by a factory so that a fresh process can rebuild it from a reference:
``path/to/file.py:name``, ``package.module:name`` (a :class:`Workload` or a zero-argument
factory returning one) or a built-in name (``sincos``, ``mlp``, ``transformer``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .errors import WorkloadError
from .model import Shape

Inputs = Any  # a tuple of positional args, or a dict of keyword args


@dataclass(frozen=True)
class Workload:
    """A thing to compile and the inputs to feed it.

    ``build()`` returns the function or ``nn.Module`` to compile (called once per trial, in the
    trial's own process). ``make_inputs(shape)`` returns the positional arguments (a tuple) or
    keyword arguments (a dict) for one request of that shape; it is called with the torch RNG
    seeded from the shape, so inputs are reproducible. ``dims`` names the shape dimensions a
    stream varies, in order.

    ``step(fn, *args, **kwargs)``, when given, is how one request runs the (compiled) target:
    a training workload compiles the model and runs forward, loss, backward and the optimizer
    step around it, so the request's latency is the whole step. ``grad`` enables autograd.
    ``snapshot()``, for a step that changes state, saves it and returns a function restoring
    it: the numerics check then runs eager and compiled steps from the same state.
    """

    name: str
    build: Callable[[], Callable[..., Any]]
    make_inputs: Callable[[Shape], Inputs]
    dims: tuple[str, ...]
    default_stream: tuple[Shape, ...]
    description: str = ""
    grad: bool = False
    step: Callable[..., Any] | None = field(default=None, compare=False)
    snapshot: Callable[[], Callable[[], None]] | None = field(default=None, compare=False)
    ref: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.dims:
            raise WorkloadError(f"workload {self.name!r} declares no shape dimensions (dims=)")


def as_call_args(inputs: Inputs) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (list, tuple)):
        return tuple(inputs), {}
    return (inputs,), {}


def bind_arguments(target: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Name the call's arguments as the compiled frame sees them (``x`` for ``forward(self, x)``)."""
    fn = target.forward if isinstance(target, torch.nn.Module) else target
    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return {f"arg{i}": a for i, a in enumerate(args)} | dict(kwargs)
    named: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        param = bound.signature.parameters[name]
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            named.update({f"{name}[{i}]": v for i, v in enumerate(value)})
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[name] = value
    return named


# ----------------------------------------------------------------------------- built-ins


def _sincos() -> Workload:
    def build() -> Callable[..., Any]:
        def sincos(x: torch.Tensor) -> torch.Tensor:
            return x.sin() + x.cos()

        return sincos

    return Workload(
        name="sincos",
        description="x.sin() + x.cos() over 1-D sizes (the seed article's example)",
        build=build,
        make_inputs=lambda s: (torch.randn(s["n"]),),
        dims=("n",),
        default_stream=tuple({"n": n} for n in (16, 16, 32, 32, 64, 16)),
    )


def _mlp() -> Workload:
    def build() -> Callable[..., Any]:
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(256, 512),
            torch.nn.GELU(),
            torch.nn.Linear(512, 512),
            torch.nn.GELU(),
            torch.nn.Linear(512, 128),
            torch.nn.LayerNorm(128),
        ).eval()

    return Workload(
        name="mlp",
        description="Linear-GELU ×2 + Linear + LayerNorm, 256→128 features, varying batch",
        build=build,
        make_inputs=lambda s: (torch.randn(s["batch"], 256),),
        dims=("batch",),
        default_stream=tuple({"batch": b} for b in (1, 1, 4, 8, 32, 2, 1, 8, 32, 4)),
    )


class _Encoder(torch.nn.Module):
    def __init__(self, d_model: int, heads: int, layers: int, ff: int) -> None:
        super().__init__()
        # SiLU, as in current LLM blocks. It also keeps eager off nn.TransformerEncoderLayer's
        # fused inference kernel (taken only for relu/gelu), which torch.compile would keep as
        # one opaque op per layer: both sides then run the same per-op layer math.
        layer = torch.nn.TransformerEncoderLayer(
            d_model, heads, ff, dropout=0.0, batch_first=True, activation=torch.nn.functional.silu
        )
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)


def transformer_workload(layers: int = 4, d_model: int = 128, heads: int = 4, ff: int = 256) -> Workload:
    """``nn.TransformerEncoder`` with ``layers`` identical layers; batch and sequence vary."""

    def build() -> Callable[..., Any]:
        torch.manual_seed(0)
        return _Encoder(d_model, heads, layers, ff).eval()

    pairs = ((1, 16), (1, 16), (4, 32), (8, 57), (8, 128), (2, 16), (4, 32), (8, 57))
    return Workload(
        name="transformer",
        description=f"nn.TransformerEncoder (SiLU), {layers} layers of d_model={d_model}, varying batch and sequence",
        build=build,
        make_inputs=lambda s: (torch.randn(s["batch"], s["seq"], d_model),),
        dims=("batch", "seq"),
        default_stream=tuple({"batch": b, "seq": q} for b, q in pairs),
    )


def _builtins() -> dict[str, Callable[[], Workload]]:
    from . import zoo

    return {
        "sincos": _sincos,
        "mlp": _mlp,
        "transformer": transformer_workload,
        "convnet": zoo.convnet,
        "mlp-train": zoo.mlp_train,
        "gpt2-tiny": zoo.gpt2_tiny,
        "minilm": zoo.minilm,
    }


class _Builtins(Mapping[str, Callable[[], Workload]]):
    """The built-in workloads by name; the real models import their libraries only when built."""

    def __getitem__(self, key: str) -> Callable[[], Workload]:
        return _builtins()[key]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(_builtins())

    def __len__(self) -> int:
        return len(_builtins())


BUILTINS: Mapping[str, Callable[[], Workload]] = _Builtins()


# ----------------------------------------------------------------------------- loading


def _import_file(path: Path) -> Any:
    module_name = f"_compilescope_workload_{abs(hash(str(path)))}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise WorkloadError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    parent = str(path.parent)
    if parent not in sys.path:
        sys.path.insert(0, parent)
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:  # the user's module is not ours to end the process
        del sys.modules[module_name]
        raise WorkloadError(f"importing {path} called {_exit_call(exc)}") from None
    except Exception as exc:  # the user's module failed while importing
        del sys.modules[module_name]
        raise WorkloadError(f"importing {path} raised {type(exc).__name__}: {exc}") from None
    return module


def resolve_reference(ref: str) -> str:
    """Make a file reference absolute so a worker process in another directory finds it."""
    if ref in BUILTINS:
        return ref
    target, sep, name = ref.rpartition(":")
    if sep and target.endswith(".py"):
        return f"{Path(target).resolve()}:{name}"
    return ref


def load_workload(ref: str) -> Workload:
    """Load a workload by reference; raise :class:`WorkloadError` naming what went wrong."""
    if ref in BUILTINS:
        return _with_ref(BUILTINS[ref](), ref)
    target, sep, name = ref.rpartition(":")
    if not sep or not target or not name:
        builtins = ", ".join(sorted(BUILTINS))
        raise WorkloadError(
            f"unknown workload {ref!r}: use path/to/file.py:name, package.module:name or a built-in ({builtins})"
        )
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise WorkloadError(f"workload file {target!r} does not exist")
        module = _import_file(path.resolve())
    else:
        try:
            module = importlib.import_module(target)
        except ImportError as exc:
            raise WorkloadError(f"cannot import module {target!r}: {exc}") from None
        except SystemExit as exc:
            raise WorkloadError(f"importing {target!r} called {_exit_call(exc)}") from None
        except Exception as exc:
            raise WorkloadError(f"importing {target!r} raised {type(exc).__name__}: {exc}") from None
    obj = getattr(module, name, None)
    if obj is None:
        raise WorkloadError(f"{target!r} has no attribute {name!r}")
    if not isinstance(obj, Workload):
        if not callable(obj):
            raise WorkloadError(f"{ref!r} is neither a Workload nor a factory of one")
        try:
            obj = obj()
        except SystemExit as exc:
            raise WorkloadError(f"workload factory {ref!r} called {_exit_call(exc)}") from None
        except Exception as exc:
            raise WorkloadError(f"workload factory {ref!r} raised {type(exc).__name__}: {exc}") from None
        if not isinstance(obj, Workload):
            raise WorkloadError(f"factory {ref!r} returned {type(obj).__name__}, not a compilescope.Workload")
    return _with_ref(obj, resolve_reference(ref))


def _with_ref(w: Workload, ref: str) -> Workload:
    import dataclasses

    return dataclasses.replace(w, ref=ref)


def _exit_call(exc: SystemExit) -> str:
    """``sys.exit(5)``, ``sys.exit('message')``, ``sys.exit()`` as the user wrote it."""
    return "sys.exit()" if exc.code is None else f"sys.exit({exc.code!r})"


def build_target(workload: Workload) -> Callable[..., Any]:
    """Call the workload's factory; a raising factory is the user's error, reported in one line."""
    try:
        target = workload.build()
    except SystemExit as exc:  # sys.exit() in build(): the workload's error, not the end of the run
        raise WorkloadError(f"workload {workload.name!r}: build() called {_exit_call(exc)}") from None
    except Exception as exc:
        raise WorkloadError(f"workload {workload.name!r} raised while building: {type(exc).__name__}: {exc}") from None
    if not callable(target):
        raise WorkloadError(f"workload {workload.name!r} built {type(target).__name__}, which is not callable")
    return target


def seeded_inputs(workload: Workload, shape: Shape) -> Inputs:
    """Inputs for ``shape`` with the RNG seeded from the shape, so every process agrees."""
    seed = zlib.crc32(repr(sorted(shape.items())).encode()) & 0x7FFFFFFF
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return workload.make_inputs(shape)
