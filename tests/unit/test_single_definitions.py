"""Each shared concept is decided in one place, read from the source's syntax tree (not its
text): what happened to a request (:func:`compilescope.analysis.outcomes.classify`), the
recompile limit in force (:func:`~compilescope.analysis.outcomes.limit_in_force`), the 5%
tolerance (:func:`~compilescope.analysis.outcomes.within_tolerance`), what a compile
record's outcome means (its properties in :mod:`compilescope.model`), a shape's label and the
``make_inputs`` rule (:mod:`compilescope.model`).

Each detector is first shown to catch the code it forbids, so a detector that reads nothing
cannot pass."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import compilescope

SRC = Path(compilescope.__file__).parent
OUTCOMES = SRC / "analysis" / "outcomes.py"

# the words any table or forecast uses for what happened to a request
OUTCOME_WORDS = frozenset({
    "hit", "compile", "compiled", "recompile", "recompiled", "refused", "eager", "eager fallback",
    "partial eager fallback", "raised", "error", "reused", "first compile", "unknown",
})
# what a call's records say happened: the facts a classifier branches on
CALL_FACTS = frozenset({"ran_eagerly", "refused", "is_compile", "is_recompile", "failed", "compile_ids", "made_entry"})
RECORD_OUTCOMES = frozenset({"compiled", "failed", "refused"})


def _modules(*skip: Path) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        if path not in skip:
            yield str(path.relative_to(SRC)), ast.parse(path.read_text(encoding="utf-8"), str(path))


def _words(node: ast.AST) -> set[str]:
    """The outcome words an expression produces (text inside an f-string is prose, not one)."""
    found: set[str] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.JoinedStr):
            continue
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in OUTCOME_WORDS:
            found.add(n.value)
        todo.extend(ast.iter_child_nodes(n))
    return found


def _reads_a_fact(test: ast.AST) -> bool:
    """A condition on what a call's records say: one of :data:`CALL_FACTS`, or a comparison
    with an outcome word."""
    for n in ast.walk(test):
        if isinstance(n, ast.Attribute) and n.attr in CALL_FACTS:
            return True
        if isinstance(n, ast.Compare) and _words(n) and not isinstance(n.left, ast.Constant):
            return True  # ("eager" in names asks whether a name is listed, not what happened)
    return False


def _produced(stmts: list[ast.stmt]) -> set[str]:
    """The outcome words the statements of one branch return or assign (not those of nested
    branches, which are judged on their own test)."""
    found: set[str] = set()
    for s in stmts:
        if isinstance(s, ast.Return) and s.value is not None:
            found |= _words(s.value)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
            found |= _words(s.value)
    return found


def classifiers(tree: ast.Module) -> list[int]:
    """The lines where code decides an outcome word from a call's facts: an ``if`` or a
    conditional expression whose test reads a fact and whose branch produces a word."""
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and _reads_a_fact(n.test) and _produced(n.body):
            lines.append(n.lineno)
        elif isinstance(n, ast.IfExp) and _reads_a_fact(n.test) and (_words(n.body) or _words(n.orelse)):
            lines.append(n.lineno)
    return sorted(set(lines))


def outcome_comparisons(tree: ast.Module) -> list[int]:
    """The lines comparing a record's ``.outcome`` with a record outcome (``compiled``,
    ``failed``, ``refused``) instead of reading its property."""
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            on_outcome = any(isinstance(s, ast.Attribute) and s.attr == "outcome" for s in sides)
            constants = {c.value for s in sides for c in ast.walk(s) if isinstance(c, ast.Constant)}
            if on_outcome and constants and constants <= RECORD_OUTCOMES:  # not a request outcome's words
                lines.append(n.lineno)
    return lines


def _names(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute))}


def _is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def literal_limits(tree: ast.Module) -> list[int]:
    """The lines where a recompile limit is a literal: a number beside a recompile limit in
    ``a or 8``/``a if … else 8``, or a number given to a name of one."""
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, ast.BoolOp):
            parts = n.values
        elif isinstance(n, ast.IfExp):
            parts = [n.body, n.orelse, n.test]
        else:
            parts = []
        if any(_is_int(p) for p in parts) and any("recompile_limit" in name for p in parts for name in _names(p)):
            lines.append(n.lineno)
        targets: list[tuple[str, ast.AST | None]] = []
        if isinstance(n, ast.Assign):
            targets = [(name, n.value) for t in n.targets for name in _names(t)]
        elif isinstance(n, ast.AnnAssign):
            targets = [(name, n.value) for name in _names(n.target)]
        elif isinstance(n, ast.keyword) and n.arg:
            targets = [(n.arg, n.value)]
        if any("recompile_limit" in name and v is not None and _is_int(v) for name, v in targets):
            lines.append(n.lineno)
    return sorted(set(lines))


def tolerance_tests(tree: ast.Module) -> list[int]:
    """The lines computing with ``TOLERANCE`` — a comparison or arithmetic on it (formatting
    it in a message is neither)."""
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.Compare, ast.BinOp)) and "TOLERANCE" in _names(n):
            lines.append(n.lineno)
    return sorted(set(lines))


def strategy_name_matches(tree: ast.Module) -> list[int]:
    """The lines comparing a strategy's name with a registered name (what a strategy does is
    its descriptor's: ``Strategy.dynamic``, ``static()``, ``compiles``, ``takes``)."""
    from compilescope.strategies import strategy_names

    names = set(strategy_names())
    lines = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            sides = [n.left, *n.comparators]
            about = any("strategy" in name.lower() for s in sides for name in _names(s))
            literal = {c.value for s in sides for c in ast.walk(s) if isinstance(c, ast.Constant)}
            if about and literal & names:
                lines.append(n.lineno)
    return lines


SECOND = {
    "a classifier": '''
def status(call, records):
    if call.error:
        return "error"
    if any(r.refused for r in records):
        return "refused"
    return "reused"
''',
    "a ternary classifier": 'what = "compile" if record.compile_ids else "eager"\n',
    "a repeat rule": 'row = "eager" if seen[key] == "eager" else "hit"\n',
    "a literal limit": "limit = trial.spec.options.recompile_limit or trial.env.recompile_limit_default or 8\n",
    "a literal default": "class P:\n    recompile_limit_default: int = 8\n",
    "a tolerance test": "if abs(w - 1) <= TOLERANCE:\n    pass\n",
    "a tolerance product": "tie = a <= b * (1 + TOLERANCE)\n",
    "an outcome comparison": 'made = [r for r in records if r.outcome == "compiled"]\n',
    "a strategy by name": 'if strategy in ("default", "dynamic"):\n    pass\n',
}


def test_the_detectors_catch_what_they_forbid():
    found = {
        "a classifier": classifiers, "a ternary classifier": classifiers, "a repeat rule": classifiers,
        "a literal limit": literal_limits, "a literal default": literal_limits,
        "a tolerance test": tolerance_tests, "a tolerance product": tolerance_tests,
        "an outcome comparison": outcome_comparisons, "a strategy by name": strategy_name_matches,
    }
    for what, code in SECOND.items():
        assert found[what](ast.parse(code)), what
    # reading an outcome, formatting the tolerance and counting are not deciding
    innocent = ast.parse('''
def counts(observed, predicted):
    hits = sum(o.outcome == "hit" for o in observed)
    why = f"within {TOLERANCE:.0%}: a tie"
    if r.refused:
        what = "refused by the recompile limit (the call ran eagerly)"
    limit = limit_in_force(options.recompile_limit)
    return hits, why, what, limit
''')
    assert not classifiers(innocent) and not tolerance_tests(innocent) and not literal_limits(innocent)
    # and the one module that decides is seen deciding
    tree = ast.parse(OUTCOMES.read_text(encoding="utf-8"))
    assert classifiers(tree) and tolerance_tests(tree)


def test_one_classifier_of_what_happened_to_a_request():
    found = [f"{name}:{line}" for name, tree in _modules(OUTCOMES) for line in classifiers(tree)]
    assert not found, f"an outcome decided outside analysis/outcomes.py (use classify / the tables' words): {found}"


def test_record_outcomes_are_read_through_their_properties():
    found = [f"{name}:{line}" for name, tree in _modules(SRC / "model.py") for line in outcome_comparisons(tree)]
    assert not found, f"CompileRecord.outcome compared by hand (use is_compile, made_entry, failed, refused): {found}"


def test_no_literal_recompile_limit():
    found = [f"{name}:{line}" for name, tree in _modules() for line in literal_limits(tree)]
    assert not found, f"a literal recompile limit (use outcomes.limit_in_force, compat's accessor): {found}"


def test_one_tolerance_test():
    found = [f"{name}:{line}" for name, tree in _modules(OUTCOMES) for line in tolerance_tests(tree)]
    assert not found, f"a second tolerance comparison (use within_tolerance / tolerance_side): {found}"


def test_one_shape_label_and_one_inputs_rule():
    """Each defined once, at module level, and its body copied under no other name (a method
    of that name, such as a report row's ``shape_label``, calls it)."""
    canonical = {"shape_label": "model.py", "call_arguments": "model.py", "percentile": "analysis/regimes.py",
                 "weighted_mean": "analysis/regimes.py"}
    bodies = {}
    for name, tree in _modules():
        for n in tree.body:
            if isinstance(n, ast.FunctionDef) and canonical.get(n.name) == name:
                bodies[n.name] = ast.dump(ast.Module(body=_code(n), type_ignores=[]))
    assert set(bodies) == set(canonical)
    found = []
    for name, tree in _modules():
        for n in tree.body:
            if not isinstance(n, ast.FunctionDef):
                continue
            body = ast.dump(ast.Module(body=_code(n), type_ignores=[]))
            for what, where in canonical.items():
                if (n.name == what and name != where) or (body == bodies[what] and n.name != what):
                    found.append(f"{name}:{n.lineno} {n.name} restates {where}'s {what}")
    assert not found, found


def _code(fn: ast.FunctionDef) -> list[ast.stmt]:
    """A function's statements without its docstring."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def test_forecast_and_warm_up_read_strategy_descriptors_not_names():
    found = [f"{name}:{line}" for name, tree in _modules() if name.startswith(("forecast/", "warmup/"))
             for line in strategy_name_matches(tree)]
    assert not found, f"a strategy's behaviour matched by its name (read Strategy.dynamic / static()): {found}"


def _defined_twice(tree: ast.Module) -> list[str]:
    """Top-level functions and classes a module defines more than once (the later one silently
    wins: the earlier is dead code that reads as the definition)."""
    seen: dict[str, int] = {}
    found = []
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if any(isinstance(d, ast.Name) and d.id == "overload" for d in n.decorator_list):
                continue  # a typing.overload signature: the definition follows it
            if n.name in seen:
                found.append(f"{n.name} (lines {seen[n.name]} and {n.lineno})")
            seen[n.name] = n.lineno
    return found


def test_no_module_defines_a_name_twice():
    assert _defined_twice(ast.parse("def f():\n    pass\n\n\ndef f():\n    return 1\n")) == ["f (lines 1 and 5)"]
    assert _defined_twice(ast.parse("@overload\ndef f(x: int) -> int: ...\n\n\ndef f(x):\n    return x\n")) == []
    found = [f"{name}: {what}" for name, tree in _modules() for what in _defined_twice(tree)]
    assert not found, found
