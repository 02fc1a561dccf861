"""Renderers only format: every decision is the report model's (built in analysis/). Read from
the renderers' syntax trees (not by running them), a renderer must not

* import torch, numpy, statistics, math or re, nor any of compilescope besides the report
  model, the records, units and the other renderers (``test_render_contract.py``);
* compare a report value with a word or a number, or with another report value (a status
  test such as ``t.status == "ok"``, a threshold, a join of two tables by name) — ``is None``
  and truthiness (is there a value, is a count nonzero) are allowed;
* parse a string it was given (``startswith``, ``split``, ``find``…);
* compute with report values: no ``-``, ``/``, ``//``, ``%``, ``**`` on one, no ``+`` of one
  with a number or another value, no ``*`` but a scaling by a constant (seconds to ms), no
  ``sum``, ``min``, ``max``, ``sorted``.

A *report value* here is an attribute read (``t.status``; ``self.`` aside) or an item of one.
The layout module (``render/grid.py``) computes column widths, so it is held to a rule of its
own: it imports nothing of the report model, so no report value reaches it but as a cell's
text. Formatting a figure (``fmt_time``, ``f"{x:.1%}"``) is what a renderer is for.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import compilescope

RENDER = Path(compilescope.__file__).parent / "render"
LAYOUT = "grid.py"
NOT_IN_A_RENDERER = ("torch", "numpy", "statistics", "math", "re")
PARSING = {"startswith", "endswith", "split", "rsplit", "partition", "rpartition", "find", "rfind", "index", "count",
           "removeprefix", "removesuffix"}
DERIVING = {"sum", "min", "max", "sorted"}


def _is_value(node: ast.AST) -> bool:
    """An attribute read of something other than ``self``, or an item of one."""
    if isinstance(node, ast.Subscript):
        return _is_value(node.value)
    if isinstance(node, ast.Attribute):
        return not (isinstance(node.value, ast.Name) and node.value.id == "self")
    return False


def _holds_value(node: ast.AST) -> bool:
    """A report value, or an expression of ``and``/``or``/``if``/arithmetic over one."""
    if _is_value(node):
        return True
    if isinstance(node, ast.BoolOp):
        return any(_holds_value(v) for v in node.values)
    if isinstance(node, ast.IfExp):
        return _holds_value(node.body) or _holds_value(node.orelse)
    if isinstance(node, ast.BinOp):
        return _holds_value(node.left) or _holds_value(node.right)
    return False


def _is_word_or_number(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(_is_word_or_number(e) for e in node.elts)
    return False


def _is_number(node: ast.AST) -> bool:
    """A number, or a choice between numbers (``1 if x else 0``)."""
    if isinstance(node, ast.IfExp):
        return _is_number(node.body) and _is_number(node.orelse)
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def decisions(source: str) -> list[str]:
    """Each place in ``source`` that decides or derives instead of formatting, as
    ``line: what``, in line order."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        where = getattr(node, "lineno", 0)
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            tested = [s for s in sides if _holds_value(s)]
            others = [s for s in sides if _is_word_or_number(s)]
            if any(not isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and tested and (others or len(tested) > 1):
                found.append((where, f"{where}: compares {ast.unparse(node)}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PARSING:
            found.append((where, f"{where}: parses {ast.unparse(node)}"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DERIVING:
            found.append((where, f"{where}: derives {ast.unparse(node)}"))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)):
            left = node.left if isinstance(node, ast.BinOp) else node.target
            right = node.right if isinstance(node, ast.BinOp) else node.value
            op = node.op
            value = _holds_value(left) or _holds_value(right)
            if not value:
                continue
            if isinstance(op, ast.Mult):
                bad = not (_is_number(left) or _is_number(right) or _is_text(left) or _is_text(right))
            elif isinstance(op, ast.Add):
                bad = not (_is_text(left) or _is_text(right)) and (
                    _is_number(left) or _is_number(right) or (_holds_value(left) and _holds_value(right)))
            elif isinstance(op, ast.Mod):
                bad = not _is_text(left)  # "%" formatting of a string is formatting
            else:
                bad = True
            if bad:
                found.append((where, f"{where}: computes {ast.unparse(node)}"))
    return [what for _, what in sorted(found, key=lambda f: f[0])]


def imports(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.append(node.module or "")
    return out


def _renderers() -> list[Path]:
    return [p for p in sorted(RENDER.glob("*.py")) if p.name not in ("__init__.py", LAYOUT)]


def test_the_reader_finds_each_kind_of_decision():
    source = '''
def f(t, report, rows, s):
    a = "bad" if t.status not in ("ok", "partial") else ""
    b = report.errors > 1
    c = next(m for m in report.measured if m.strategy == t.strategy)
    d = any(c.endswith("/0") for c in t.compile_ids)
    e = t.agree / t.requests
    f = (s.q3 - s.median) * 1e3
    g = p.index + 1
    h = sum(x.compile_s for x in rows)
    i = t.a * t.b
    j = t.completed + (1 if axis == "cumulative" else 0)
    return a, b, c, d, e, f, g, h, i, j
'''
    found = decisions(source)
    assert [line.split(":", 1)[0] for line in found] == ["3", "4", "5", "6", "7", "8", "9", "10", "11", "12"], found
    fine = '''
def f(t, x, parts, MAX):
    a = T(t.label + ": ", "bold" if t.call_errors else "")
    b = "—" if t.speedup is None else f"×{t.speedup:.2f}"
    c = [p.latency_s * 1e3 for p in t.timeline]
    d = STYLE.get(t.flag, "")
    e = len(t.after) - MAX
    f = "  " + t.why
    parts += [T(n) for n in t.notes]
    return a, b, c, d, e, f
'''
    assert decisions(fine) == []


# What the reader flags that is formatting after all, by renderer and the text of the place
# (its line number aside), each with why. Nothing else may be flagged: a decision belongs in
# the report model, made in analysis/ (analysis/presented.py for what is derived only to be shown).
FORMATTING = {
    ("html.py", "derives max(300, 26 * len(rows) + 120)"):
        "a plot's height in pixels from the number of bars it draws: layout, as grid.py's column widths",
}


@pytest.mark.parametrize("path", _renderers(), ids=lambda p: p.name)
def test_a_renderer_formats_and_decides_nothing(path):
    found = [what for what in decisions(path.read_text(encoding="utf-8"))
             if (path.name, what.split(": ", 1)[1]) not in FORMATTING]
    assert found == []


def test_every_place_allowed_as_formatting_is_still_there():
    """An entry of :data:`FORMATTING` whose place is gone is removed with it."""
    found = {(p.name, what.split(": ", 1)[1]) for p in _renderers() for what in decisions(p.read_text(encoding="utf-8"))}
    assert set(FORMATTING) <= found


@pytest.mark.parametrize("path", sorted(RENDER.glob("*.py")), ids=lambda p: p.name)
def test_a_renderer_imports_no_numerics_library(path):
    bad = [m for m in imports(path.read_text(encoding="utf-8")) if m.split(".")[0] in NOT_IN_A_RENDERER]
    assert bad == []


def test_the_layout_never_sees_the_report_model():
    found = [m for m in imports((RENDER / LAYOUT).read_text(encoding="utf-8")) if m.startswith("compilescope")]
    source = (RENDER / LAYOUT).read_text(encoding="utf-8")
    relative = [n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.level]
    assert found == [] and relative == []
