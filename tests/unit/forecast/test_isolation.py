"""What a forecast puts back of the workload's module: each name on its own object, never
raising, the snapshot never handed out (tests/unit/forecast/test_forecast.py runs it on real
dry runs)."""

from __future__ import annotations

import functools
import types

import torch

from compilescope.forecast.isolation import ModuleState, user_module


def _module(**names):
    m = types.ModuleType("users_workload")
    m.__file__ = "/home/user/project/users_workload.py"
    vars(m).update(names)
    return m


def test_each_name_is_put_back_on_its_own_object_with_what_held_it():
    a = torch.zeros(3)
    m = _module(A=a, B=[a], REG={"seen": [1]}, T=(torch.zeros(2), [0]), FLAG=False, N=0)
    held_reg, held_t, held_t_list = m.REG, m.T, m.T[1]
    state = ModuleState([m])
    for _ in range(2):  # twice: the snapshot is never what a restore hands out
        m.A.add_(1)
        m.B.append(5)
        m.REG["seen"].append(2)
        m.T[0].add_(1)
        m.T[1].append(1)
        m.FLAG, m.N = True, 7
        m.ADDED = 3
        state.restore()
        assert m.A is a and not a.any() and m.B == [a] and m.B[0] is a  # the list holds A itself again
        assert m.REG is held_reg and m.REG == {"seen": [1]}
        assert not m.T[0].any() and m.T[1] == [0] and (m.FLAG, m.N) == (False, 0) and not hasattr(m, "ADDED")
    # a tuple stays the same object, what it holds put back in place (before: rebound to a copy,
    # so a tensor or list it shared with another name or object no longer was that one's)
    assert m.T is held_t and m.T[1] is held_t_list and held_t_list == [0]


def test_what_cannot_take_a_write_is_left_unwritten_and_restore_never_raises():
    expanded = torch.zeros(1).expand(8)  # one element behind 8: no in-place copy can be made into it
    with torch.inference_mode():
        frozen = torch.zeros(4)
    grown = torch.zeros(2)
    m = _module(BIAS=expanded, FROZEN=frozen, GROWN=grown)
    state = ModuleState([m])
    state.restore()  # unchanged: nothing written, nothing raised (before: copy_ raised through the forecast)
    assert m.BIAS is expanded and m.FROZEN is frozen
    m.GROWN = torch.ones(5)
    grown.resize_(4).fill_(1)
    state.restore()
    assert m.GROWN is grown and grown.shape == (2,) and not grown.any()


def test_the_modules_own_memoized_functions_are_emptied_and_libraries_are_not_ours():
    @functools.lru_cache(maxsize=None)
    def table(n):
        return torch.arange(n)

    m = _module()
    table.__module__ = m.__name__
    m.table = table
    table(3)
    ModuleState([m]).restore()
    assert table.cache_info().currsize == 0
    assert not user_module("transformers.models.gpt2", types.SimpleNamespace(
        __file__="/usr/lib/python3/site-packages/transformers/models/gpt2/__init__.py"))
    assert user_module("users_workload", m)


def test_numpy_arrays_collections_dicts_and_any_name_a_call_adds():
    import collections

    import numpy as np

    flag = np.zeros(1)
    lru = collections.OrderedDict(a=1)
    seen = collections.defaultdict(int)
    m = _module(FLAG=flag, LRU=lru, SEEN=seen)
    state = ModuleState([m])
    flag[0] = 1
    lru["b"] = torch.zeros(2)
    seen[8] += 1
    m.ADDED_T = torch.nn.Parameter(torch.zeros(1))  # a tensor of a subclass (a fake one, in a dry run)
    m.ADDED_A = np.ones(2)
    state.restore()
    assert m.FLAG is flag and flag[0] == 0 and m.LRU is lru and list(lru.items()) == [("a", 1)]
    assert m.SEEN is seen and not seen and not hasattr(m, "ADDED_T") and not hasattr(m, "ADDED_A")


class _Counter:
    def __init__(self) -> None:
        self.step = 0


@__import__("dataclasses").dataclass(frozen=True)
class _Frozen:
    scale: int = 1


def test_objects_of_the_users_classes_in_containers_are_put_back_on_themselves():
    """A counter object kept in a list (reached by a weak reference), in a dict, inside another
    object, and a frozen dataclass changed through ``object.__setattr__``: each put back on
    itself. Before, the list's object was replaced by a copy (its weak reference died) and the
    others were neither saved nor put back."""
    import weakref

    kept, reg, outer, frozen = _Counter(), {"sched": _Counter()}, _Counter(), _Frozen()
    outer.inner = _Counter()
    m = _module(KEEP=[kept], REG=reg, OUT=outer, FZ=frozen)
    ref = weakref.ref(kept)
    state = ModuleState([m])
    kept.step, reg["sched"].step, outer.inner.step = 5, 6, 7
    object.__setattr__(frozen, "scale", 2)
    state.restore()
    assert ref() is kept and m.KEEP[0] is kept and kept.step == 0
    assert m.REG is reg and reg["sched"].step == 0 and m.OUT.inner.step == 0
    assert m.FZ is frozen and frozen.scale == 1
