"""What a forecast, which runs the workload's code in this process, puts back after it.

A real trial is a fresh process: each strategy's first call meets the workload's module as
importing it left it. A dry run runs every strategy in this one process, after a probe's
eager calls, and a ``forecast()`` caller keeps using the process after it; so the module
state the workload's own calls change — a flag a first call sets, a counter, a registry, a
module-level tensor changed in place — is saved before the first call and put back before
each strategy and at the end (:class:`ModuleState`), as is the global random generator.

Saved: the module-level names of the modules that define the workload's ``build``,
``make_inputs`` and ``step`` (not compilescope's, not torch's), whose values are plain
(numbers, strings, ``None``), tensors (their values, put back in place), or lists, tuples,
dicts and sets of those; a name a call adds is removed; and the module's own
``functools.lru_cache`` functions are emptied (a fresh process starts with them empty; a call
on fake tensors would leave fake tensors in them). Not saved: modules, functions,
classes, ``nn.Module`` objects and other objects (their state is the model's, which each
trial builds anew), and the state of other modules (a library's caches).
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

MAX_TENSOR_BYTES = 64 * 2**20  # a module-level tensor larger than this is not saved (nor put back)
MAX_ITEMS = 10_000  # items of a container saved, all levels together
_SKIP_MODULES = ("compilescope", "torch", "builtins")


def _saved(value: Any, budget: list[int], depth: int = 0) -> bool:
    """Whether ``value`` is state this module saves: plain, a tensor within the size bound, or
    a container of those (bounded)."""
    import torch

    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return True
    if isinstance(value, torch.Tensor):
        return type(value) is torch.Tensor and value.layout == torch.strided and \
            value.numel() * value.element_size() <= MAX_TENSOR_BYTES
    if isinstance(value, (list, tuple, dict, set, frozenset)) and type(value) in (list, tuple, dict, set, frozenset):
        budget[0] -= len(value)
        if budget[0] < 0 or depth > 4:
            return False
        items = [*value.keys(), *value.values()] if isinstance(value, dict) else list(value)
        return all(_saved(v, budget, depth + 1) for v in items)
    return False


def _copy(value: Any) -> Any:
    import torch

    return copy.deepcopy(value, {}) if not isinstance(value, torch.Tensor) else value.detach().clone()


class ModuleState:
    """The saved module-level state of the workload's modules (the module docstring)."""

    def __init__(self, modules: list[ModuleType]) -> None:
        self.modules = modules
        self.saved: list[tuple[ModuleType, dict[str, tuple[Any, Any]]]] = []
        for m in modules:
            names: dict[str, tuple[Any, Any]] = {}
            for name, value in list(vars(m).items()):
                if name.startswith("__") or not _saved(value, [MAX_ITEMS]):
                    continue
                try:
                    names[name] = (value, _copy(value))
                except Exception:  # noqa: BLE001 - a value that will not copy is not saved
                    continue
            self.saved.append((m, names))
        self.names = [set(vars(m)) for m in modules]

    @classmethod
    def of(cls, workload: Any) -> ModuleState:
        found: dict[str, ModuleType] = {}
        for fn in (getattr(workload, "build", None), getattr(workload, "make_inputs", None),
                   getattr(workload, "step", None)):
            name = getattr(fn, "__module__", None)
            module = sys.modules.get(name) if isinstance(name, str) else None
            if module is not None and not name.split(".")[0] in _SKIP_MODULES:
                found.setdefault(name, module)
        return cls(list(found.values()))

    def restore(self) -> None:
        """Put the saved names back: a tensor's values in place (the same object, where the
        call kept it and its sizes), a container's contents in place, a plain value rebound;
        a name added since, holding state of the kinds saved, removed."""
        import torch

        for (m, names), before in zip(self.saved, self.names):
            space = vars(m)
            for name, (obj, value) in names.items():
                now = space.get(name)
                if isinstance(value, torch.Tensor):
                    if now is obj and obj.shape == value.shape and obj.dtype == value.dtype:
                        with torch.no_grad():
                            obj.copy_(value)
                    else:
                        space[name] = value.clone()
                elif isinstance(value, (list, dict, set)) and now is obj:
                    obj.clear()
                    (obj.update if not isinstance(obj, list) else obj.extend)(_copy(value))
                else:
                    space[name] = _copy(value) if isinstance(value, (list, dict, set)) else value
            for name in set(space) - before:
                if not name.startswith("__") and _saved(space[name], [MAX_ITEMS]):
                    del space[name]
            for value in list(space.values()):  # the module's own memoized functions: empty, as in a fresh process
                if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info") \
                        and getattr(value, "__module__", None) == m.__name__:
                    value.cache_clear()


@contextmanager
def put_back(workload: Any) -> Iterator[ModuleState]:
    """Within it the workload's module state and the global random generator are saved; both
    are put back at the end (:meth:`ModuleState.restore` may be called between strategies)."""
    import torch

    state = ModuleState.of(workload)
    with torch.random.fork_rng(devices=[]):
        try:
            yield state
        finally:
            state.restore()
