"""The layers of ``src/compilescope``, lowest first, and the rule between them: a module
imports only its own layer and the layers below. Read from the source with ``ast``: imports
at module level and inside functions count; one under ``if TYPE_CHECKING:`` names a type for
a type checker and never runs (as ``test_hygiene.py`` reads them).

- **foundation** — errors, units, the file rules (``paths``), the records (``model``);
- **records** — the report model (``report/``), the versioned files (``schema``), and the
  one place torch's private API and texts are read (``compat``, ``torchtext``);
- **capture** — what runs inside a measured process: ``collect/``, the strategy registry,
  streams, the user's options parsed, the shape recorder, the walk of a call's values
  (``leaves``);
- **analysis** — records → report model, pure (``analysis/``);
- **execution** — running code: workloads, trials and executors (``execute/``), probes,
  ``watch``, the results store, ``prepare`` (what a run needs, checked);
- **render** — report model → text (``render/``);
- **features** — what the commands build on: ``forecast/``, ``warmup/``, ``sweep``,
  ``script_advise``;
- **app** — one use case per command (``app/``);
- **front** — the doors: ``cli/``, ``api``, the package itself, the pytest plugin.

An import of a package a module belongs to (``from . import compat`` imports
``compilescope`` first) is not an import of the package's layer.
"""

from __future__ import annotations

from .test_hygiene import MODULES, _import_nodes, _resolve

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("errors", "units", "paths", "model")),
    ("records", ("report", "schema", "compat", "torchtext")),
    ("capture", ("collect", "strategies", "stream", "options", "shapes_record", "leaves")),
    ("analysis", ("analysis",)),
    ("execution", ("workload", "zoo", "watch", "execute", "probe", "store", "prepare")),
    ("render", ("render",)),
    ("features", ("forecast", "warmup", "sweep", "script_advise")),
    ("app", ("app",)),
    ("front", ("cli", "api", "pytest_plugin", "")),  # "": the package, compilescope/__init__.py
)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module`` (dotted, ``compilescope.…``): the layer
    naming it or the package it is in; -1 when none does."""
    name = module.removeprefix("compilescope").removeprefix(".")
    for index, (_, members) in enumerate(LAYERS):
        if any(name == m or (m and name.startswith(m + ".")) for m in members):
            return index
    return -1


def _all_imports(module: str) -> set[str]:
    """Every compilescope module ``module`` imports, at module level or in a function, less
    the packages it is itself in."""
    import ast

    path = MODULES[module]
    nodes = _import_nodes(ast.parse(path.read_text(), str(path)), everywhere=True)
    found = {target for node in nodes for target in _resolve(module, path, node)} - {module}
    return {t for t in found if not module.startswith(t + ".")}


def _named(module: str) -> str:
    index = layer_of(module)
    return f"{module} ({LAYERS[index][0] if index >= 0 else 'no layer'})"


def upward(graph: dict[str, set[str]]) -> list[str]:
    """The imports of ``graph`` (module → modules it imports) that run up the layers."""
    return sorted(f"{_named(module)} imports {_named(target)}" for module, targets in graph.items()
                  for target in targets if layer_of(target) > layer_of(module))


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) < 0] == []


def test_the_reader_sees_imports_in_functions():
    # a check that reads nothing passes on any code: these imports are inside functions
    assert "compilescope.app.run" in _all_imports("compilescope.cli.run")
    assert "compilescope.warmup.plan" in _all_imports("compilescope.app.warmup")
    assert "compilescope.analysis.progress" in _all_imports("compilescope.app.progress")


def test_the_check_finds_an_upward_import():
    graph = {"compilescope.analysis.build": {"compilescope.model", "compilescope.app.run"},
             "compilescope.forecast.engine": {"compilescope.api"}, "compilescope.cli.run": {"compilescope.app.run"}}
    assert upward(graph) == ["compilescope.analysis.build (analysis) imports compilescope.app.run (app)",
                             "compilescope.forecast.engine (features) imports compilescope.api (front)"]


def test_no_import_runs_up_the_layers():
    graph = {module: _all_imports(module) for module in MODULES}
    assert upward(graph) == []
