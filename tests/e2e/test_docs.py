"""The docs' examples run: every block marked ``<!-- doctest -->`` (Python, in a process of
its own as ``python -c``, printing what its ``# → …`` comments say it prints), ``<!-- doctest: pytest -->``
(a test file, run with pytest) and ``<!-- doctest: sh -->`` (compilescope commands, each printing
what its ``# → …`` comment says); and the CLI reference is current.

The examples' trials are forked from a fork server (conftest.forked_trials): what the examples
print and assert is what their trials compile and return, never a cold start's time, and a
forked trial compiles as a fresh interpreter does. Each Python example is a process of its own
too, forked by the session's CLI server (tests/cli_server.py: torch imported, nothing compiled)."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from ..conftest import cli_here, run_python_code

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
pytestmark = pytest.mark.usefixtures("forked_trials")
BLOCK = re.compile(r"<!-- doctest(?:: (?P<kind>\w+))? -->\n```(?:python|sh)\n(?P<code>.*?)\n```", re.S)


def blocks() -> list[tuple[str, str, str]]:
    out = []
    for page in sorted(DOCS.glob("*.md")):
        for i, m in enumerate(BLOCK.finditer(page.read_text())):
            out.append((f"{page.name}#{i}", m["kind"] or "python", m["code"]))
    return out


def test_the_docs_have_runnable_examples():
    kinds = {kind for _, kind, _ in blocks()}
    assert {"python", "pytest", "sh"} <= kinds


@pytest.mark.parametrize("name, kind, code", blocks(), ids=[b[0] for b in blocks()])
def test_doc_example_runs(name, kind, code, tmp_path, request):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cache"))
    if kind == "python":
        proc = run_python_code(code, cwd=tmp_path, env=env)
        assert proc.returncode == 0, f"{name}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
        expected = printed(code)  # and prints what it says it prints
        assert prints_as_documented(expected, proc.stdout), f"{name} prints:\n{proc.stdout}\ndocumented: {expected}"
    elif kind == "pytest":
        pytester = request.getfixturevalue("pytester_compiled")  # pytest in this process, the plugin by its entry point
        pytester.makepyfile(test_example=code)
        stdout = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", "test_example.py").stdout.str()
        assert "1 failed, 1 passed" in stdout, stdout[-3000:]
        assert "tensor 'args[0]' size mismatch at index 0. expected 8, actual 16" in stdout
        assert "dynamic_sources=\"L['args'][0]:0\"" in stdout
        page = (DOCS / "pytest-plugin.md").read_text()
        failure = re.search(r"the failure reads[^\n]*\n\n```\n(?P<text>.*?)\n```", page, re.S)
        assert failure is not None and prints_as_documented(failure["text"].splitlines(), stdout), stdout[-3000:]
    else:
        (tmp_path / "examples").symlink_to(ROOT / "examples")  # commands are written from the repository root
        for line in code.splitlines():
            if not line.startswith("compilescope "):
                continue
            args = shlex.split(line.split("  #", 1)[0])[1:]
            proc = cli_here(*args, cwd=tmp_path, env=env)  # the command, in this process
            assert proc.returncode == 0, f"{name}: {line}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
            expected = printed(line)  # and prints what its ``# → …`` comment says
            assert prints_as_documented(expected, proc.stdout), f"{name}: {line} prints:\n{proc.stdout[-3000:]}"


def test_cli_reference_is_current():
    sys.path.insert(0, str(DOCS))
    try:
        from make_cli_reference import reference
    finally:
        sys.path.remove(str(DOCS))
    assert (DOCS / "cli.md").read_text() == reference(), "docs/cli.md is stale: run python docs/make_cli_reference.py"


OUTPUT = re.compile(r"#\s*→ ?(?P<text>.*)$")


def printed(code: str) -> list[str]:
    """What a block says it prints: each ``# → TEXT`` comment (on a ``print`` line or a line of
    its own), in order; ``…`` stands for any text, across lines too. Other comments are prose."""
    return [m["text"].rstrip() for line in code.splitlines() if (m := OUTPUT.search(line))]


def prints_as_documented(expected: list[str], stdout: str) -> bool:
    """The documented lines are found in ``stdout`` in order, each a whole line (or lines, where
    ``…`` stands for what it leaves out), indentation and a pytest failure's ``E`` aside."""
    parts = [r"[\s\S]*?".join(re.escape(p.strip()) for p in line.split("…")) for line in expected]
    lines = "\n".join(re.sub(r"^E\s", "", line).strip() for line in stdout.splitlines())  # pytest's E prefix
    return re.search(r"[\s\S]*?".join(rf"^{p}$" for p in parts), lines, re.M) is not None


def test_the_printed_comparison_can_fail():
    assert prints_as_documented(["eager 3", "… 1"], "x\neager 3\ndefault (cold) 1\n")
    assert not prints_as_documented(["default (cold) 3"], "eager 3\n")
    assert not prints_as_documented(["3"], "13\n")  # a whole line, not a part of one
    assert not prints_as_documented(["b", "a"], "a\nb\n")  # in order
    assert printed("print(x)  # → 8\n# prose\n# → a … b\n") == ["8", "a … b"]


def test_the_readme_names_the_schema_version_files_are_written_under():
    from compilescope.model import SCHEMA_VERSION

    said = re.findall(r"under a `schema_version` \((\d+)\)", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert said == [str(SCHEMA_VERSION)]
