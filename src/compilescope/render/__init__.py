"""Renderers: each turns a report (:mod:`compilescope.report`) into text; only the CLI/API
edge writes files. A renderer is a module with a ``RENDERER`` object satisfying
:class:`Renderer` — a :class:`ByKind`, whose one dispatch table maps each report type it
renders to the function that renders it; :data:`MODULES` lists them by name, and an output
path picks one by its extension (:func:`for_path`).

An output format is one module and one line in :data:`MODULES`: the command line reads
everything else from the renderer — which commands offer it (the report types it renders),
its words in ``--out``'s help, the file endings that pick it, what it needs before any trial
runs (:meth:`Renderer.check`) and how the command names the file it wrote."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import OptionError


@runtime_checkable
class Renderer(Protocol):
    name: str  # what --out's messages call it
    extensions: tuple[str, ...]  # the file endings that pick it (".csv"); the longest match wins
    kinds: tuple[type, ...]  # the report classes it renders
    written: str  # how the command names the file it wrote ("csv: out.csv")
    help: str  # its words in --out's help (".csv", ".txt (the report as plain text)")

    def render(self, report: Any) -> str: ...

    def check(self) -> None:
        """Before any trial: what it needs is there (an optional package), else one line (OptionError)."""


@dataclass(frozen=True)
class ByKind:
    """A renderer whose dispatch table, ``by_kind``, maps each report type it renders to the
    function that renders it: its ``kinds`` are the table's keys, and a report is rendered by
    its own type's entry (a report of another type is a programming error, not bad input: the
    CLI checks an output's kind before a trial runs)."""

    name: str
    extensions: tuple[str, ...]
    written: str
    by_kind: Mapping[type, Callable[[Any], str]]
    help: str = ""  # its words in --out's help; its extensions when empty
    requires: Callable[[], object] | None = None  # raises OptionError when what it needs is missing

    @property
    def kinds(self) -> tuple[type, ...]:
        return tuple(self.by_kind)

    def render(self, report: Any) -> str:
        return self.by_kind[type(report)](report)

    def check(self) -> None:
        if self.requires is not None:
            self.requires()

    def __post_init__(self) -> None:
        if not self.help:
            object.__setattr__(self, "help", " or ".join(self.extensions))


# name → module: an output format is one module here and one line in this table
MODULES = {
    "json": "compilescope.render.json",
    "csv": "compilescope.render.csv",
    "html": "compilescope.render.html",
    "perfetto": "compilescope.render.perfetto",
    "text": "compilescope.render.text",
}


def get(name: str) -> Renderer:
    renderer: Renderer = importlib.import_module(MODULES[name]).RENDERER
    return renderer


def renderers() -> list[Renderer]:
    return [get(name) for name in MODULES]


def writing(*kinds: type) -> list[Renderer]:
    """The renderers that write one of ``kinds`` (the outputs a command offers), in registry order."""
    return [r for r in renderers() if any(k in r.kinds for k in kinds)]


def for_path(path: Path | str, option: str = "--out") -> Renderer:
    """The renderer whose extension ``path`` ends with (the longest, so ``x.trace.json`` is a
    trace, not a results JSON); an unknown one is bad input, named in one line."""
    name = str(path).lower()
    found = [(len(ext), r) for r in renderers() for ext in r.extensions if name.endswith(ext)]
    if not found:
        known = ", ".join(ext for r in renderers() for ext in r.extensions)
        raise OptionError(f"{option} {str(path)!r}: unknown output format; the file name must end with one of {known}")
    return max(found, key=lambda f: f[0])[1]
