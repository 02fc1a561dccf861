"""The analysis stays readable a function at a time, and each definition is stated once:
no function in ``compilescope.analysis`` is longer than :data:`MOST_LINES`, and the rules
every report shares are defined in one place and used, not restated."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import compilescope

SRC = Path(compilescope.__file__).parent
ANALYSIS = SRC / "analysis"
MOST_LINES = 60


def _functions(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def test_no_function_in_analysis_is_longer_than_the_limit():
    long = [f"{path.relative_to(SRC)}:{line} {name} ({n} lines)"
            for path in sorted(ANALYSIS.rglob("*.py")) for name, line, n in _functions(path) if n > MOST_LINES]
    assert not long, f"functions over {MOST_LINES} lines: " + "; ".join(long)


def test_the_walk_sees_every_function():
    here = {name: n for name, _, n in _functions(Path(__file__))}
    assert here["test_no_function_in_analysis_is_longer_than_the_limit"] == 4
    assert sum(1 for p in ANALYSIS.rglob("*.py") for _ in _functions(p)) > 100


def _sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(SRC.rglob("*.py"))}


def test_each_shared_rule_is_defined_once():
    sources = _sources()
    for pattern, where in ((r"^TOLERANCE = ", "analysis/regimes.py"), (r"^def iqr_separated\(", "analysis/regimes.py"),
                           (r"^def count_compiles\(", "analysis/counts.py"), (r"^def break_key\(", "analysis/counts.py"),
                           (r"^DEFAULT_STRATEGIES = ", "model.py")):
        found = [str(p.relative_to(SRC)) for p, text in sources.items() if re.search(pattern, text, re.M)]
        assert found == [where], (pattern, found)


def _code_lines(path: Path, text: str):
    """The lines of ``text`` outside docstrings (an example in prose is no definition)."""
    docs: set[int] = set()
    for node in ast.walk(ast.parse(text, str(path))):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docs.update(range(body[0].lineno, body[0].end_lineno + 1))
    return ((i, line) for i, line in enumerate(text.splitlines(), 1) if i not in docs)


def test_no_module_restates_a_shared_rule():
    restated = {
        r"\.q3 < \w+\.q1|\.q1 > \w+\.q3": "an IQR separation test (use iqr_separated)",
        r"split\(\"\\n\", 1\)\[0\], b\.filename": "the distinct graph-break key (use break_key)",
        r"\"eager,default,static,dynamic\"|\[\"eager\", \"default\", \"static\", \"dynamic\"\]":
            "the default strategies (use DEFAULT_STRATEGIES)",
        r"recompile_limit or \d": "torch's recompile limit (use compat.recompile_limit_value)",
        r"sum\(1 for \w+ in [\w.]+ if \w+\.(is_compile|is_recompile|refused|failed)\)"
        r"|sum\(\w+\.(is_recompile|refused|failed) for": "a compile count (use count_compiles)",
    }
    found = [f"{p.relative_to(SRC)}:{i}: {why}"
             for p, text in _sources().items() if p.name != "counts.py" for i, line in _code_lines(p, text)
             for pattern, why in restated.items() if re.search(pattern, line)]
    assert not found, "; ".join(found)


def test_the_tolerance_is_the_only_five_percent_in_the_analysis():
    """A relative 5% anywhere in the analysis is the one tolerance, by name; the other
    figures near it are named for what they are (seconds, a single sample's width)."""
    named = {"TOLERANCE", "SINGLE_SAMPLE_MIN_S"}
    found = []
    for path in sorted(ANALYSIS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id in named for t in n.targets)}
        found += [f"{path.name}:{n.lineno}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and n.value in (0.05, 1.05, 0.95) and id(n) not in allowed]
    assert not found, found
