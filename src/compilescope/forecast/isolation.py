"""What a forecast, which runs the workload's code in this process, puts back after it.

A real trial is a fresh process: each strategy's first call meets the workload's module as
importing it left it. A dry run runs every strategy in this one process, after a probe's
eager calls, and a ``forecast()`` caller keeps using the process after it; so the module
state the workload's own calls change — a flag a first call sets, a counter, a registry, a
module-level tensor changed in place — is saved before the first call and put back before
each dry trial and at the end (:class:`ModuleState`), as are the CPU random generator,
Python's and numpy's global generators, and torch's process-wide settings that Dynamo guards (:func:`torch_settings`: a ``make_inputs``
that turns on deterministic algorithms, a default dtype a call sets). The baseline is the
module as the forecast found it: a fresh process's, for the CLI.

Saved: the module-level names of the modules that define the workload's ``build``,
``make_inputs`` and ``step`` (not compilescope's, not torch's) and of the user's modules those
reach by name (:func:`workload_modules`: a helper module's cache); the attributes of the
classes those modules define (a cache a class keeps for all its instances) and of the objects
and modules of the user's classes they hold (a scheduler's step); and the closure cells and
mutable defaults of their functions and their classes' methods (a counter a factory's
function keeps, ``_calls=[0]``) — each value plain (numbers, strings, ``None``), a tensor or
numpy array (its values, put back in place), an ``itertools.count``, a ``random.Random`` or a
numpy random generator (a hidden counter, a module's own random draws), or a list, tuple,
dict or set of those (``collections``' dicts too: ``OrderedDict``, ``defaultdict``,
``Counter``). A name a call adds is removed (unless a module, class or function), and the
module's own ``functools.lru_cache`` functions are emptied (a fresh process starts with them
empty; a call on fake tensors would leave fake tensors in them). Not saved: other
``nn.Module`` objects (their state is the model's, which each trial builds anew), objects
of other classes, and the state of other modules (a library's caches, a module of the
user's that the workload's modules do not name).
"""

from __future__ import annotations

import ast
import copy
import functools
import itertools
import random
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FunctionType, ModuleType
from typing import Any

MAX_TENSOR_BYTES = 64 * 2**20  # a module-level tensor larger than this is not saved (nor put back)
MAX_SAVED_BYTES = 256 * 2**20  # all saved tensors of a forecast together
MAX_ITEMS = 10_000  # items of a container saved, all levels together
MAX_MODULES = 32  # the user's modules saved and read: the workload's own and those they reach
_SKIP_MODULES = ("compilescope", "torch", "builtins")


def _saved(value: Any, budget: list[int], depth: int = 0) -> bool:
    """Whether ``value`` is state this module saves: plain, a tensor within the size bound, or
    a container of those (bounded). ``budget``: [items left, tensor bytes left]."""
    import torch

    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return True
    if _generator(value):  # a counter or a random generator the module keeps: put back as it was
        return type(value) is not itertools.count or _copy_count(value) is not None
    if isinstance(value, torch.Tensor):
        size = value.numel() * value.element_size()
        budget[1] -= size
        return (type(value) is torch.Tensor and value.layout == torch.strided and not value.is_inference()
                and size <= MAX_TENSOR_BYTES and budget[1] >= 0)
    if type(value).__module__ == "numpy" and type(value).__name__ == "ndarray":
        budget[1] -= value.nbytes
        return value.dtype != object and value.nbytes <= MAX_TENSOR_BYTES and budget[1] >= 0
    if isinstance(value, (list, tuple, dict, set, frozenset)) and type(value).__module__ in ("builtins", "collections"):
        budget[0] -= len(value)
        if budget[0] < 0 or depth > 4:
            return False
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else list(value)
        return all(_saved(v, budget, depth + 1) for v in items)
    if user_object(value) and depth <= 4:  # an object of the user's class in a container: its attributes
        own = vars(value)
        budget[0] -= len(own)
        return budget[0] >= 0 and all(_saved(v, budget, depth + 1) for v in own.values())
    return False


def user_module(name: str, module: ModuleType | None) -> bool:
    """A module of the user's (a workload file, their own package), not compilescope's, torch's,
    the standard library's or an installed library's (whose state and caches are not ours)."""
    if module is None or name.split(".")[0] in _SKIP_MODULES:
        return False
    path = getattr(module, "__file__", None)
    if not path:
        return False
    return not any(str(path).startswith(p + "/") for p in _installed()) and "site-packages" not in str(path)


@functools.cache
def _installed() -> tuple[str, ...]:
    """The interpreter's standard library and installed packages' folders."""
    import sysconfig

    paths = sysconfig.get_paths()
    return tuple({paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)})


def user_object(value: Any) -> bool:
    """An instance of a class a module of the user's defines, with attributes of its own (a
    scheduler, a counter object), not a module, function, class or ``nn.Module``."""
    import types

    import torch

    if isinstance(value, (types.ModuleType, types.FunctionType, types.MethodType, type, torch.nn.Module)):
        return False
    try:
        own = vars(value)
    except TypeError:  # no __dict__
        return False
    name = type(value).__module__
    return bool(own) and isinstance(name, str) and user_module(name, sys.modules.get(name))


def _user_nn_module(value: Any) -> bool:
    """An ``nn.Module`` of a class the user's module defines, kept by a module (a schedule made
    a module): no trial builds it anew."""
    import torch

    name = type(value).__module__
    return isinstance(value, torch.nn.Module) and user_module(name, sys.modules.get(name))


def closure_cells(fn: Any) -> list[tuple[str, Any, Any]]:
    """``(name, contents, cell)`` of each filled closure cell of ``fn`` and of the functions it
    wraps (``__wrapped__``: ``functools.wraps``, ``torch.compiler.disable``), 8 deep at most."""
    out: list[tuple[str, Any, Any]] = []
    seen: set[int] = set()
    for _ in range(8):
        if fn is None or id(fn) in seen:
            break
        seen.add(id(fn))
        code = getattr(fn, "__code__", None)
        for name, cell in zip(getattr(code, "co_freevars", ()), getattr(fn, "__closure__", None) or ()):
            try:
                out.append((name, cell.cell_contents, cell))
            except ValueError:  # an empty cell
                continue
        try:
            fn = getattr(fn, "__wrapped__", None)
        except Exception:  # noqa: BLE001 - an object whose attributes raise wraps nothing we can see
            break
    return out


def workload_modules(homes: list[ModuleType]) -> list[ModuleType]:
    """The user's modules whose state a workload's calls can keep: ``homes`` (those defining its
    functions) and the user's modules they reach by name — a module imported (``import rope``), or
    the module of a function, class or object imported from one (``from rope import table``) —
    and theirs in turn, at most :data:`MAX_MODULES`, the nearest first."""
    found = {m.__name__: m for m in homes}
    queue = list(homes)
    while queue and len(found) < MAX_MODULES:
        for value in list(vars(queue.pop(0)).values()):
            if isinstance(value, ModuleType):
                name: Any = value.__name__
            else:
                try:
                    name = getattr(value, "__module__", None)
                except Exception:  # noqa: BLE001 - an object whose attributes raise reaches no module
                    continue
            module = sys.modules.get(name) if isinstance(name, str) else None
            if module is not None and name not in found and user_module(name, module) and len(found) < MAX_MODULES:
                found[name] = module
                queue.append(module)
    return list(found.values())


def torch_settings() -> dict[str, Any]:
    """The process-wide settings of torch's that Dynamo's global state guard checks before every
    compiled frame runs (its fields, checked on torch 2.13: grad mode, deterministic algorithms
    and their warn-only mode, the default dtype, the intra-op thread count, the float32 matmul
    precision and the reduced-precision reductions), read through torch's public API. A call,
    a step or a ``make_inputs`` that changes one changes which cache entry runs."""
    import torch

    matmul = torch.backends.cuda.matmul
    return {
        "torch.is_grad_enabled()": torch.is_grad_enabled(),
        "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled(),
        "torch.is_deterministic_algorithms_warn_only_enabled()": torch.is_deterministic_algorithms_warn_only_enabled(),
        "torch.get_default_dtype()": torch.get_default_dtype(),
        "torch.get_num_threads()": torch.get_num_threads(),
        "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
        "allow_fp16_reduced_precision_reduction": matmul.allow_fp16_reduced_precision_reduction,
        "allow_bf16_reduced_precision_reduction": matmul.allow_bf16_reduced_precision_reduction,
    }


def _set_torch_settings(saved: dict[str, Any]) -> None:
    """Each of :func:`torch_settings` that differs now set back to ``saved``'s value; one that
    cannot be set stays as it is."""
    import torch

    matmul = torch.backends.cuda.matmul
    setters = {
        "torch.is_grad_enabled()": torch.set_grad_enabled,
        "torch.are_deterministic_algorithms_enabled()": lambda v: torch.use_deterministic_algorithms(
            v, warn_only=saved["torch.is_deterministic_algorithms_warn_only_enabled()"]),
        "torch.is_deterministic_algorithms_warn_only_enabled()": lambda v: torch.use_deterministic_algorithms(
            saved["torch.are_deterministic_algorithms_enabled()"], warn_only=v),
        "torch.get_default_dtype()": torch.set_default_dtype,
        "torch.get_num_threads()": torch.set_num_threads,
        "torch.get_float32_matmul_precision()": torch.set_float32_matmul_precision,
        "allow_fp16_reduced_precision_reduction": lambda v: setattr(matmul, "allow_fp16_reduced_precision_reduction", v),
        "allow_bf16_reduced_precision_reduction": lambda v: setattr(matmul, "allow_bf16_reduced_precision_reduction", v),
    }
    now = torch_settings()
    for name, value in saved.items():
        if now.get(name) != value:
            try:
                setters[name](value)
            except Exception:  # noqa: BLE001 - a setting torch will not take back stays as the calls left it
                continue


def _restore_array(obj: Any, value: Any) -> None:
    import numpy as np

    if obj.shape == value.shape and obj.dtype == value.dtype:
        if not np.array_equal(obj, value, equal_nan=obj.dtype.kind in "fc"):
            np.copyto(obj, value)
    else:
        raise ValueError("resized")  # rebound to a copy instead


def _restore_tensor(obj: Any, value: Any) -> None:
    import torch

    if obj.shape == value.shape and obj.dtype == value.dtype and torch.equal(obj, value):
        return  # unchanged: no write (an expanded tensor cannot take one)
    with torch.no_grad():
        if obj.shape != value.shape:
            obj.set_(value.clone())
        else:
            obj.copy_(value)


class ModuleState:
    """The saved module-level state of the workload's modules (the module docstring)."""

    def __init__(self, modules: list[ModuleType]) -> None:
        self.saved: list[tuple[ModuleType, dict[str, tuple[Any, Any]]]] = []
        budget = [MAX_ITEMS, MAX_SAVED_BYTES]
        for m in modules:
            names: dict[str, tuple[Any, Any]] = {}
            memo: dict[int, Any] = {}  # one per module: a container holding another saved name keeps holding it
            for name, value in list(vars(m).items()):
                if name.startswith("__") or not _saved(value, [MAX_ITEMS, budget[1]]):
                    continue
                try:
                    names[name] = (value, _copy(value, memo))
                except Exception:  # noqa: BLE001 - a value that will not copy is not saved
                    continue
                budget[1] -= sum(t.numel() * t.element_size() for t in _tensors(value))
            self.saved.append((m, names))
        self.names = [set(vars(m)) for m, _ in self.saved]
        self.torch = torch_settings()
        numpy = sys.modules.get("numpy")  # Python's and numpy's global generators: a make_inputs may draw from them
        self.generators = (random.getstate(), numpy.random.get_state() if numpy is not None else None)
        # the objects of the user's classes a module holds (a scheduler's step) and the closure
        # cells of its functions (a counter a factory's function keeps): what they hold of the same kinds
        self.objects: list[tuple[Any, dict[str, tuple[Any, Any]], set[str]]] = []
        self.cells: list[tuple[Any, Any, Any]] = []
        self.defaults: list[tuple[Any, Any]] = []  # a function's mutable default, put back in place
        for m in modules:
            for value in list(vars(m).values()):
                if isinstance(value, FunctionType) and value.__module__ == m.__name__:
                    self._function(value, budget)
                elif isinstance(value, type) and value.__module__ == m.__name__:
                    for method in [v for v in vars(value).values() if isinstance(v, FunctionType)]:
                        self._function(method, budget)
                elif user_object(value) or _user_nn_module(value):
                    attrs = self._attributes(value, budget)
                    self.objects.append((value, attrs, set(vars(value))))
        # the classes a module defines: their attributes of the same kinds (a cache kept on the class)
        self.classes: list[tuple[type, dict[str, tuple[Any, Any]], set[str]]] = []
        for m in modules:
            for cls in [v for v in vars(m).values() if isinstance(v, type) and v.__module__ == m.__name__]:
                self.classes.append((cls, self._attributes(cls, budget), set(vars(cls))))

    def _function(self, fn: Any, budget: list[int]) -> None:
        """What a function of the user's keeps between calls: its closure cells (a count a
        factory's function keeps) and its mutable defaults (``_calls=[0]``)."""
        for _, held, cell in closure_cells(fn):
            if _saved(held, [MAX_ITEMS, budget[1]]):
                try:
                    self.cells.append((cell, held, _copy(held, {})))
                except Exception:  # noqa: BLE001 - a value that will not copy is not saved
                    continue
                budget[1] -= sum(t.numel() * t.element_size() for t in _tensors(held))
        for value in [*(getattr(fn, "__defaults__", None) or ()), *(getattr(fn, "__kwdefaults__", None) or {}).values()]:
            if isinstance(value, (list, dict, set)) and _saved(value, [MAX_ITEMS, budget[1]]):
                try:
                    self.defaults.append((value, copy.deepcopy(value)))
                except Exception:  # noqa: BLE001 - a value that will not copy is not saved
                    continue

    @staticmethod
    def _attributes(owner: Any, budget: list[int]) -> dict[str, tuple[Any, Any]]:
        """``owner``'s own attributes of the kinds saved, each with a copy (``budget``: bytes left)."""
        attrs: dict[str, tuple[Any, Any]] = {}
        for name, value in list(vars(owner).items()):
            if name.startswith("__") or not _saved(value, [MAX_ITEMS, budget[1]]):
                continue
            try:
                attrs[name] = (value, _copy(value, {}))
            except Exception:  # noqa: BLE001 - a value that will not copy is not saved
                continue
            budget[1] -= sum(t.numel() * t.element_size() for t in _tensors(value))
        return attrs

    @classmethod
    def of(cls, workload: Any) -> ModuleState:
        found: dict[str, ModuleType] = {}
        for fn in (getattr(workload, "build", None), getattr(workload, "make_inputs", None),
                   getattr(workload, "step", None)):
            name = getattr(fn, "__module__", None)
            module = sys.modules.get(name) if isinstance(name, str) else None
            if module is not None and user_module(name, module):
                found.setdefault(name, module)
        return cls(workload_modules(list(found.values())))

    def restore(self) -> None:
        """Put the saved names back, each on its own object where it is mutable (a tensor's
        values in place, a container's contents; the name bound to that object again, so what
        holds it sees the change), an immutable value rebound to a fresh copy; a name added
        since, holding state of the kinds saved, removed; the module's memoized functions
        emptied; torch's settings set back. Never raises: a value that cannot be put back is
        left as it is."""
        _set_torch_settings(self.torch)
        try:
            random.setstate(self.generators[0])
            if self.generators[1] is not None:
                sys.modules["numpy"].random.set_state(self.generators[1])
        except Exception:  # noqa: BLE001 - a generator that will not take its state back draws on
            pass
        for (m, names), before in zip(self.saved, self.names):
            try:
                self._restore(m, names, before)
            except Exception:  # noqa: BLE001 - putting back is best effort; the user's code must not fail for it
                continue
        for owner, attrs, names in (*self.classes, *self.objects):
            try:
                self._restore_class(owner, attrs, names)
            except Exception:  # noqa: BLE001 - as above
                continue
        for cell, obj, value in self.cells:
            try:
                cell.cell_contents = _put_back(obj, value, {})
            except Exception:  # noqa: BLE001 - this one stays as the calls left it
                continue
        for obj, value in self.defaults:  # a container: its contents put back in place
            try:
                _put_back(obj, value, {})
            except Exception:  # noqa: BLE001 - this one stays as the calls left it
                continue

    @staticmethod
    def _restore_class(cls: Any, attrs: dict[str, tuple[Any, Any]], before: set[str]) -> None:
        """A class's (an object's) saved attributes bound to their first objects again, those
        put back as they were; an attribute of the saved kinds a call added, removed."""
        for name, (obj, value) in attrs.items():
            try:
                setattr(cls, name, _put_back(obj, value, {}))
            except Exception:  # noqa: BLE001 - this one stays as the calls left it
                continue
        for name in set(vars(cls)) - before:
            if not name.startswith("__") and _saved(vars(cls)[name], [MAX_ITEMS, MAX_SAVED_BYTES]):
                delattr(cls, name)

    @staticmethod
    def _restore(m: ModuleType, names: dict[str, tuple[Any, Any]], before: set[str]) -> None:
        import torch

        space = vars(m)
        memo: dict[int, Any] = {}  # a saved copy → the original it is put back on
        for name, (obj, value) in names.items():
            if isinstance(obj, (torch.Tensor, list, dict, set)) or _is_array(obj):
                memo[id(value)] = obj
        for name, (obj, value) in names.items():
            try:
                space[name] = _put_back(obj, value, memo)
            except Exception:  # noqa: BLE001 - this one stays as the calls left it
                continue
        for name in set(space) - before:  # a name a call added (a module, function or class it imported stays)
            if not name.startswith("__") and not isinstance(space[name], (ModuleType, type)) and not callable(space[name]):
                del space[name]
        for value in list(space.values()):  # the module's own memoized functions: empty, as in a fresh process
            if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info") \
                    and getattr(value, "__module__", None) == m.__name__:
                value.cache_clear()


def _put_back(obj: Any, value: Any, memo: dict[int, Any]) -> Any:
    """``obj`` made to hold what ``value``, its saved copy, holds — a tensor's or an array's
    values in place (an array resized: a copy instead), a container's contents (``memo``: a
    saved copy → the original it is put back on, for a container holding another saved one),
    an immutable value copied anew — and returned, the object to bind the name to again."""
    import torch

    if isinstance(obj, torch.Tensor):
        _restore_tensor(obj, value)
        return obj
    if type(obj) is itertools.count:  # rebound to a fresh copy: one cannot be set
        return _copy_count(value)
    if isinstance(obj, random.Random):
        obj.setstate(value.getstate())
        return obj
    if _generator(obj):  # numpy's
        if hasattr(obj, "bit_generator"):
            obj.bit_generator.state = value.bit_generator.state
        else:
            obj.set_state(value.get_state())
        return obj
    if _is_array(obj):
        try:
            _restore_array(obj, value)
            return obj
        except ValueError:
            return value.copy()
    if user_object(obj) and type(obj) is type(value):  # its attributes put back on it: the same object
        own = vars(obj)
        for name in [n for n in own if n not in vars(value)]:
            del own[name]
        for name, saved in vars(value).items():  # through its __dict__: a frozen or guarded object too
            own[name] = _put_back(own[name], saved, memo) if name in own else copy.deepcopy(saved, dict(memo))
        return obj
    # a container of the same kind: each element put back on the one there (a tensor, an object
    # or a container another name or a weak reference shares stays that object), the rest anew
    if isinstance(obj, list) and type(obj) is type(value) and len(obj) == len(value):
        obj[:] = [_put_back(o, v, memo) for o, v in zip(obj, value)]
        return obj
    if isinstance(obj, dict) and type(obj) is type(value) and list(obj) == list(value):
        for key, saved in value.items():
            obj[key] = _put_back(obj[key], saved, memo)
        return obj
    if type(obj) is tuple and type(value) is tuple and len(obj) == len(value):
        back = tuple(_put_back(o, v, memo) for o, v in zip(obj, value))
        return obj if all(b is o for b, o in zip(back, obj)) else back
    if isinstance(obj, (list, dict, set)):
        fresh = copy.deepcopy(value, {k: v for k, v in memo.items() if k != id(value)})
        obj.clear()
        (obj.update if not isinstance(obj, list) else obj.extend)(fresh)  # type: ignore[attr-defined]
        return obj
    if type(obj) is type(value) and isinstance(obj, (bool, int, float, complex, str, bytes, type(None))) \
            and obj == value:
        return obj  # unchanged: the same object
    return copy.deepcopy(value, dict(memo))


def _generator(value: Any) -> bool:
    """An ``itertools.count``, a ``random.Random`` or a numpy random generator: a sequence a
    module keeps, which a dry run's calls (and the probe's) advance as a fresh process's would not."""
    if type(value) is itertools.count or isinstance(value, random.Random):
        return True
    return type(value).__module__.startswith("numpy.random") and type(value).__name__ in ("Generator", "RandomState")


def _copy_count(value: Any) -> Any:
    """A new ``itertools.count`` at ``value``'s next number and step (from its repr: copying one
    otherwise is deprecated), or None."""
    try:
        return itertools.count(*(ast.literal_eval(p.strip()) for p in repr(value)[len("count("):-1].split(",")))
    except (ValueError, SyntaxError, TypeError):
        return None


def _copy(value: Any, memo: dict[int, Any]) -> Any:
    return _copy_count(value) if type(value) is itertools.count else copy.deepcopy(value, memo)


def _is_array(value: Any) -> bool:
    return type(value).__module__ == "numpy" and type(value).__name__ == "ndarray"


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    if isinstance(value, (list, tuple, set, frozenset)):
        return [t for v in value for t in _tensors(v)]
    return []


_ACTIVE: list[ModuleState] = []  # the state saved by the outermost put_back in force


def before_a_dry_run() -> None:
    """The saved module state put back, as a fresh trial process meets it (every dry trial
    starts so, inside :func:`put_back`)."""
    if _ACTIVE:
        _ACTIVE[-1].restore()


@contextmanager
def put_back(workload: Any) -> Iterator[ModuleState]:
    """Within it the workload's module state and the CPU random generator are saved; both are
    put back at the end, and the module state before each dry trial (:func:`before_a_dry_run`).
    Nested, the outer one's saved state stands (it was saved first)."""
    import torch

    state = _ACTIVE[-1] if _ACTIVE else ModuleState.of(workload)
    _ACTIVE.append(state)
    with torch.random.fork_rng(devices=[]):
        try:
            yield state
        finally:
            _ACTIVE.pop()
            state.restore()
