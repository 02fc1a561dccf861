"""The executors ``--executor NAME`` may name: one :class:`ExecutorEntry` line each.

A new executor is one file — a class with the four members of
:class:`~compilescope.execute.executor.Executor` and a factory taking its settings by name —
and one line in :data:`EXECUTORS`. The command line offers every entry by name, validates
``--executor`` against them (an unknown name: one line, exit 2) and turns each entry's
:class:`Setting` into an option of ``run``, ``advise``, ``sweep`` and ``warmup``, refused with
another executor. Factories are imported by name when an executor is made, so an entry's
optional dependencies (Ray: ``compilescope[ray]``) are needed only by whoever chooses it;
this module imports neither them nor torch.

Executors the command line does not offer implement the same interface:
:class:`~compilescope.execute.inprocess.InProcessExecutor` runs a trial in the caller's own
process (the forecast's dry run), which a measured run never does (cold means a fresh
process).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import OptionError

if TYPE_CHECKING:
    from .executor import Executor
    from .start import ProcessStarter


@dataclass(frozen=True)
class Setting:
    """One setting of an executor: the factory's keyword ``name`` and the command-line option
    ``--NAME`` (underscores as dashes). ``kind``: ``str``, ``int`` or ``float``, within
    ``low``..``high`` when given."""

    name: str
    help: str
    default: Any = None
    kind: type = str
    low: float | None = None
    high: float | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class ExecutorEntry:
    """``factory`` (``module:attribute``) makes the executor from its ``settings`` by name;
    ``local``: its trials are processes of this machine started by a
    :class:`~compilescope.execute.start.ProcessStarter`, which the factory also takes (as
    ``start``), so ``run`` can start the first ones while the driver starts up."""

    name: str
    factory: str
    help: str
    settings: tuple[Setting, ...] = ()
    local: bool = False


DEFAULT_EXECUTOR = "local"
EXECUTORS: dict[str, ExecutorEntry] = {e.name: e for e in (
    ExecutorEntry("local", "compilescope.execute.local:LocalExecutor", "one fresh subprocess at a time", local=True),
    ExecutorEntry("ray", "compilescope.execute.ray_executor:RayExecutor.from_settings",
                  "each trial a Ray task in a fresh worker process", (
                      Setting("ray_address", "the Ray cluster to join (default: RAY_ADDRESS, else a local one)."),
                      Setting("cpus_per_trial", "CPUs each trial reserves (trials run concurrently as the cluster's "
                              "CPUs allow).", 1.0, float, low=0.1),
                      Setting("ray_timeout", "seconds to wait for the cluster to answer before giving up.", 30.0,
                              float, low=0.1, high=3600),
                  )),
)}


def executor_names() -> list[str]:
    return list(EXECUTORS)


def executor_entry(name: str) -> ExecutorEntry:
    """The entry of ``name``, or a one-line :class:`OptionError`."""
    try:
        return EXECUTORS[name]
    except KeyError:
        raise OptionError(f"unknown --executor {name!r}: use one of {', '.join(EXECUTORS)}") from None


def settings() -> dict[str, tuple[Setting, list[str]]]:
    """Every executor setting by name, with the executors that take it."""
    out: dict[str, tuple[Setting, list[str]]] = {}
    for entry in EXECUTORS.values():
        for setting in entry.settings:
            out.setdefault(setting.name, (setting, []))[1].append(entry.name)
    return out


def make_executor(name: str, given: Mapping[str, Any] | None = None, start: ProcessStarter | None = None) -> Executor:
    """The executor ``name`` with its settings (those in ``given``, else their defaults);
    ``start``: processes already started ahead, for an executor whose trials start locally."""
    entry = executor_entry(name)
    values = {s.name: (given or {}).get(s.name, s.default) for s in entry.settings}
    if entry.local and start is not None:
        values["start"] = start
    module, _, attribute = entry.factory.partition(":")
    factory: Any = importlib.import_module(module)
    for part in attribute.split("."):
        factory = getattr(factory, part)
    return factory(**values)  # type: ignore[no-any-return]
