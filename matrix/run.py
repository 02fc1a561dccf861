"""The torch version matrix: `make test-torch TORCH=X` and `make test-matrix`.

    python matrix/run.py 2.10.0        # build .venv-torch-2.10.0 once, run the compat tests there
    python matrix/run.py --table       # the table of every version run so far
    python matrix/run.py 2.10.0 -k probe   # run again the compat tests -k selects, kept with the rest

For one version it builds (once) a side environment with that torch and this checkout
(matrix/side-venv.sh), runs the tests marked ``compat(capability)`` there — among them
tests/e2e/test_probe.py, which checks probe against PyTorch's own ``TORCH_LOGS`` on every probe
scenario — and writes each test's outcome by capability to matrix/results/X.json. A capability
is ``ok`` when its tests passed, ``unavailable`` when every one was skipped because that torch
lacks the feature (the cell names the release that has it), ``broken`` when one failed.
Exit status: 0 when nothing is broken, 1 otherwise, 2 for bad usage.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "matrix" / "results"
# The versions the package declares and `make test-matrix` checks (compat.CHECKED_VERSIONS).
VERSIONS = ("2.6.0", "2.7.0", "2.8.0", "2.10.0", "2.12.0", "2.13.0", "2.14.1")
_SINCE = re.compile(r"\(torch (?P<since>[\d.]+) or newer has it\)")


def side_python(version: str) -> Path:
    out = subprocess.run(["bash", str(ROOT / "matrix" / "side-venv.sh"), version], cwd=ROOT,
                         stdout=subprocess.PIPE, text=True, check=True)
    return ROOT / out.stdout.strip().splitlines()[-1]


def run_version(version: str, workers: int, select: str | None = None) -> dict[str, object]:
    """Run the compat tests under torch ``version`` (those ``select`` picks, as pytest's -k,
    their outcomes then replacing those of the same tests in the version's last results)."""
    python = side_python(version)
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = RESULTS / f"{version}.json"
    before = json.loads(report.read_text()) if select and report.exists() else None
    fresh = RESULTS / f"{version}.part.json"
    fresh.unlink(missing_ok=True)
    cmd = [str(python), "-m", "pytest", "-m", "compat", "-p", "no:randomly", "-q", "--capability-report", str(fresh)]
    cmd += ["-k", select] if select else []
    if workers > 1:
        cmd += ["-n", str(workers), "--dist", "loadfile"]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT)
    if not fresh.exists():
        raise SystemExit(f"matrix: pytest under torch {version} wrote no report (exit status {proc.returncode})")
    data = json.loads(fresh.read_text())
    fresh.unlink()
    data["seconds"] = round(time.monotonic() - started, 1)
    data["pytest_exit"] = proc.returncode
    if before is not None:  # the re-run tests' outcomes replace theirs; the others are kept
        rerun = {o["test"] for o in data["outcomes"]}
        data["outcomes"] = [o for o in before["outcomes"] if o["test"] not in rerun] + data["outcomes"]
        data["seconds"] = round(before.get("seconds", 0) + data["seconds"], 1)
        failed = any(o["outcome"] == "failed" for o in data["outcomes"])
        data["pytest_exit"] = 1 if failed else 0
    report.write_text(json.dumps(data, indent=1))
    return data


def statuses(data: dict[str, object]) -> dict[str, str]:
    """Each capability's cell: ok, unavailable (release that has it), broken (n failed)."""
    by: dict[str, list[dict[str, str]]] = {}
    for o in data["outcomes"]:  # type: ignore[union-attr]
        by.setdefault(o["capability"], []).append(o)
    out = {}
    for capability, outcomes in by.items():
        failed = sum(1 for o in outcomes if o["outcome"] == "failed")
        passed = sum(1 for o in outcomes if o["outcome"] == "passed")
        if failed:
            out[capability] = f"broken ({failed} of {len(outcomes)} failed)"
        elif passed:
            out[capability] = f"ok ({passed})"
        else:
            since = {m["since"] for o in outcomes if (m := _SINCE.search(o["reason"]))}
            out[capability] = f"unavailable ({', '.join(sorted(since))}+)" if since else "skipped"
    return out


def table() -> str:
    results = {}
    for path in RESULTS.glob("*.json"):
        data = json.loads(path.read_text())
        results[path.stem] = data
    if not results:
        return "matrix: no results yet (run `make test-torch TORCH=X` or `make test-matrix`)"
    versions = sorted(results, key=lambda v: tuple(int(p) for p in re.findall(r"\d+", v)))
    cells = {v: statuses(results[v]) for v in versions}
    capabilities = sorted({c for v in versions for c in cells[v]})
    head = ["capability"] + [f"torch {v}" for v in versions]
    rows = [[c] + [cells[v].get(c, "–") for v in versions] for c in capabilities]
    rows.append(["tests (passed / skipped / failed)"] + [
        "{} / {} / {}".format(*(sum(1 for o in results[v]["outcomes"] if o["outcome"] == k)
                                for k in ("passed", "skipped", "failed"))) for v in versions])
    rows.append(["python; seconds"] + [f"{results[v]['python']}; {results[v].get('seconds', '?')} s" for v in versions])
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in rows])


def main(argv: list[str]) -> int:
    workers, select = 1, None
    if "-n" in argv:
        i = argv.index("-n")
        workers = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if "-k" in argv:
        i = argv.index("-k")
        select = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if argv == ["--table"]:
        print(table())
        return 0
    if len(argv) != 1 or not re.fullmatch(r"\d+\.\d+\.\d+", argv[0]):
        print(f"usage: matrix/run.py VERSION [-n WORKERS] [-k EXPR] | --table   (checked: {' '.join(VERSIONS)})",
              file=sys.stderr)
        return 2
    data = run_version(argv[0], workers, select)
    cells = statuses(data)
    print(f"\ntorch {data['torch']} (python {data['python']}), {data['seconds']} s:")
    for capability in sorted(cells):
        print(f"  {capability:28} {cells[capability]}")
    return 1 if any(c.startswith("broken") for c in cells.values()) or data["pytest_exit"] not in (0,) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
