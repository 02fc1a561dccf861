"""Workloads: what to compile, how to make inputs for a shape, and a default stream.

A workload is built by a factory so that a fresh process can rebuild it from a reference:
``path/to/file.py:name``, ``package.module:name`` (a :class:`Workload` or a zero-argument
factory returning one) or a built-in name (:data:`compilescope.zoo.BUILTINS`). The
:class:`~compilescope.model.Workload` record itself is defined in :mod:`compilescope.model`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from .errors import WorkloadError
from .model import Inputs, Shape, Workload
from .zoo import BUILTINS, sized_builtin


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


# ----------------------------------------------------------------------------- loading


def _import_file(path: Path) -> Any:
    # named alike in every process (``hash`` of a str is salted per process): a type defined
    # here is named in a recording's guards as it is in the process that forecasts from it
    module_name = f"_compilescope_workload_{hashlib.sha1(str(path).encode('utf-8', 'surrogateescape')).hexdigest()[:16]}"
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
        raise WorkloadError(f"importing {path} raised {_said(exc)}") from None
    return module


def resolve_reference(ref: str) -> str:
    """Make a file reference absolute so a worker process in another directory finds it."""
    if ref in BUILTINS or sized_builtin(ref) is not None:
        return ref
    target, sep, name = ref.rpartition(":")
    if sep and target.endswith(".py"):
        return f"{Path(target).resolve()}:{name}"
    return ref


def load_workload(ref: str) -> Workload:
    """Load a workload by reference; raise :class:`WorkloadError` naming what went wrong."""
    if ref in BUILTINS:
        return _with_ref(BUILTINS[ref](), ref)
    sized = sized_builtin(ref)
    if sized is not None:
        return _with_ref(sized, ref)
    target, sep, name = ref.rpartition(":")
    if not sep or not target or not name:
        builtins = ", ".join(sorted(BUILTINS))
        raise WorkloadError(
            f"unknown workload {ref!r}: use path/to/file.py:name, package.module:name or a built-in ({builtins}; "
            "layers:N for N layers)"
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
            raise WorkloadError(f"importing {target!r} raised {_said(exc)}") from None
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
            raise WorkloadError(f"workload factory {ref!r} raised {_said(exc)}") from None
        if not isinstance(obj, Workload):
            raise WorkloadError(f"factory {ref!r} returned {type(obj).__name__}, not a compilescope.Workload")
    return _with_ref(obj, resolve_reference(ref))


def _with_ref(w: Workload, ref: str) -> Workload:
    import dataclasses

    return dataclasses.replace(w, ref=ref)


def _said(exc: BaseException) -> str:
    """``Type: first line`` of what a user's code raised: one line, whatever its message."""
    from .torchtext import headline

    return headline(type(exc).__name__, str(exc))


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
        raise WorkloadError(f"workload {workload.name!r} raised while building: {_said(exc)}") from None
    if not callable(target):
        raise WorkloadError(f"workload {workload.name!r} built {type(target).__name__}, which is not callable")
    return target


def seeded_inputs(workload: Workload, shape: Shape) -> Inputs:
    """Inputs for ``shape`` with the RNG seeded from the shape, so every process agrees. A
    ``make_inputs`` that raises is the workload's error, in one line (:class:`WorkloadError`)."""
    seed = zlib.crc32(repr(sorted(shape.items())).encode()) & 0x7FFFFFFF
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            return workload.make_inputs(shape)
        except SystemExit as exc:
            raise WorkloadError(f"workload {workload.name!r}: make_inputs({dict(shape)!r}) called "
                                f"{_exit_call(exc)}") from None
        except Exception as exc:
            raise WorkloadError(f"workload {workload.name!r}: make_inputs({dict(shape)!r}) raised {_said(exc)}") from None
