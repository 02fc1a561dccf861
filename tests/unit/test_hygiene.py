"""The package's shape, read from its source: which module imports which.

- capture (``collect/``, ``probe/``) never imports ``analysis``: torch's text is parsed in
  ``torchtext.py`` beside ``compat.py``, which both call;
- the imports of ``src/compilescope`` form no circle, at module level or inside functions;
- PyTorch's private names appear only in ``compat.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "compilescope"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve(module: str, path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The compilescope modules an import statement names (``from . import compat`` names
    ``compilescope.compat``; ``from .model import X`` names ``compilescope.model``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in MODULES]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    if node.level:
        base = package.split(".")
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    out = [target] if target in MODULES else []
    out += [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.Module, *, everywhere: bool) -> list[ast.Import | ast.ImportFrom]:
    """The imports that run: at module level (top level, or in a top-level ``try``/``if``), and
    with ``everywhere`` those inside functions too; never one under ``if TYPE_CHECKING:``."""
    out: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node):
            todo += node.orelse
        elif everywhere or isinstance(node, (ast.If, ast.Try)):
            todo += list(ast.iter_child_nodes(node))
    return out


def _imports(module: str, *, everywhere: bool) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    nodes = _import_nodes(tree, everywhere=everywhere)
    return {target for node in nodes for target in _resolve(module, path, node)} - {module}


def test_the_reader_resolves_relative_imports():
    # a check that reads nothing would pass on any code: it must see the imports it guards
    assert "compilescope.torchtext" in _imports("compilescope.collect.records", everywhere=False)
    assert "compilescope.compat" in _imports("compilescope.strategies", everywhere=True)
    assert "compilescope.strategies.bucket" in _imports("compilescope.strategies", everywhere=True)


def _imports_torch_at_module_level(module: str) -> list[str]:
    """The modules importing torch when ``module`` is imported (it and what it imports, at
    module level, transitively)."""
    seen, todo, found = set(), [module], []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = MODULES[name]
        nodes = _import_nodes(ast.parse(path.read_text(), str(path)), everywhere=False)
        names = [a.name for n in nodes if isinstance(n, ast.Import) for a in n.names]
        names += [n.module or "" for n in nodes if isinstance(n, ast.ImportFrom) and not n.level]
        if any(n == "torch" or n.startswith("torch.") for n in names):
            found.append(name)
        todo += sorted(_imports(name, everywhere=False))
        parent = name.rpartition(".")[0]
        if parent in MODULES:
            todo.append(parent)
    return sorted(found)


def test_the_strategy_registry_imports_no_torch():
    # the CLI lists the registry's names in --help and completion, which never import torch
    assert _imports_torch_at_module_level("compilescope.strategies.bucket") == [
        "compilescope.compat", "compilescope.strategies.bucket"]
    assert _imports_torch_at_module_level("compilescope.strategies") == []
    assert _imports_torch_at_module_level("compilescope.cli") == []


def test_capture_does_not_import_analysis():
    offenders = sorted(
        f"{module} imports {target}"
        for module in MODULES if module.startswith(("compilescope.collect", "compilescope.probe"))
        for target in _imports(module, everywhere=True)
        if target == "compilescope.analysis" or target.startswith("compilescope.analysis.")
    )
    assert offenders == []


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` (a list of modules, first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_circle_finder_finds_a_circle():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_circle():
    # function-level imports count too: an import moved into a function to dodge a circle at
    # import time still ties the two modules together
    graph = {module: _imports(module, everywhere=True) for module in MODULES}
    # a package's own __init__ is imported before any of its modules: an edge module → its
    # package is an import that has already happened, not a circle
    for module, targets in graph.items():
        targets -= {m for m in targets if module.startswith(m + ".")}
    assert _circle(graph) is None


PRIVATE_NAMES = {"_orig_mod", "_torchdynamo_orig_callable", "user_stack"}


def _private_uses(tree: ast.Module) -> list[int]:
    """Lines naming a private torch API: ``torch._x`` (``torch._dynamo.…``), ``from torch._x
    import …``, ``torch.fx.experimental``, or an attribute torch sets on what it wraps
    (``_orig_mod``…), read or written, by name or through ``getattr``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            dotted = ([inner.id] if isinstance(inner, ast.Name) else []) + chain[::-1]
            if node.attr in PRIVATE_NAMES or (dotted[:1] == ["torch"] and len(dotted) > 1 and (
                    (dotted[1].startswith("_") and not dotted[1].startswith("__"))
                    or dotted[1:3] == ["fx", "experimental"])):
                lines.append(node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if any(n.startswith("torch._") or n.startswith("torch.fx.experimental") for n in names):
                lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and node.value in PRIVATE_NAMES:
            lines.append(node.lineno)
    return sorted(set(lines))


def test_the_private_api_reader_sees_them():
    code = "import torch\nfrom torch._dynamo import eval_frame\nx = torch._dynamo.reset\ny = m._orig_mod\n" \
           "z = getattr(m, '_orig_mod')\nw = torch.compiler.reset\n"
    assert _private_uses(ast.parse(code)) == [2, 3, 4, 5]


def test_torch_private_apis_only_in_compat():
    offenders = []
    for module, path in MODULES.items():
        if module == "compilescope.compat":
            continue
        text = path.read_text()
        lines = text.splitlines()
        offenders += [f"{path.relative_to(SRC)}:{n}: {lines[n - 1].strip()}" for n in _private_uses(ast.parse(text))]
    assert offenders == []
