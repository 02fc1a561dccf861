"""``advise --script``: fixes for an unmodified script, measured by re-running it.

The script runs once under ``probe`` as it is (the baseline), then once per proposal that a
setting can apply without editing it — ``dynamic_sources`` for the dims that varied,
``recompile_limit`` raised to the number of graphs a stream needed, dynamic-by-default
(``assume_static_by_default=False``) or static-only (``automatic_dynamic_shapes=False``).
Every run is a fresh process with its own empty inductor cache, so each pays its own cold
start. Proposals that need a code change are listed with the code, marked unmeasured.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .analysis.advice import group_causes, inside_input, is_buffer_size
from .analysis.build import caller_inputs
from .analysis.counts import count_compiles, graphs_needed
from .analysis.outcomes import limit_in_force
from .errors import CompilescopeError
from .model import ProbeResult
from .report import ScriptAdvice, ScriptProposal, ScriptRun
from .schema import load

def _count(result: ProbeResult) -> dict[str, Any]:
    """The run's counts by the one definition every report uses (``count_compiles``)."""
    c = count_compiles(result.compiles)
    return {"compiles": c.compiles, "recompiles": c.recompiles, "refused": c.refused, "failed": c.failed,
            "compile_s": c.compile_s}


def probe_once(script: str, args: list[str], settings: dict[str, Any], workdir: Path, label: str,
               timeout_s: float) -> tuple[ProbeResult | None, float, str | None]:
    """``compilescope probe`` on the script in a fresh process with the settings applied and
    an empty inductor cache. Returns the probe result (None when the probe itself died),
    the wall time and an error line."""
    out = workdir / f"{label}.json"
    cache = workdir / f"cache-{label}"
    cmd = [sys.executable, "-m", "compilescope.cli", "probe", "--json", str(out)]
    for key, value in settings.items():
        cmd += ["--config", f"{key}={json.dumps(value)}"]
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache))
    start = time.perf_counter()
    try:
        proc = subprocess.run([*cmd, script, *args], env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, f"timed out after {timeout_s:.0f} s"
    wall = time.perf_counter() - start
    if not out.exists():
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return None, wall, f"the probe exited with status {proc.returncode}: {tail[:200]}"
    result = load(out)
    assert isinstance(result, ProbeResult)
    return result, wall, None


def propose_settings(base: ProbeResult) -> tuple[list[ScriptProposal], list[tuple[str, str]]]:
    """Setting-only proposals for the baseline's recorded causes, narrowest first; and the
    causes only a code change fixes, with the change."""
    proposals: list[ScriptProposal] = []
    fixes: list[tuple[str, str]] = []
    sources: list[str] = []
    described: list[str] = []
    relation = False
    buffers: list[str] = []  # a buffer's size: no mark reaches it, the parameter setting does
    compiled = tuple(r for r in base.compiles if r.made_entry)
    by_function: dict[str, list[Any]] = {}
    for r in compiled:
        by_function.setdefault(r.display_name, []).append(r)
    causes = [c for name, records in by_function.items()
              for c in group_causes(tuple(records), **caller_inputs(base, name))]
    for cause in (c for c in causes if c.compile_ids):  # one that made no compile of its own needs no fix
        inside = cause.shape_reducible and inside_input(cause.source) is not None  # in a dict, a list, an object
        if cause.kind == "size" and cause.source and cause.dim is not None and (cause.reachable or inside):
            for root in cause.frame_sources or (cause.frame_source or cause.source,):
                item = f"{root}:{cause.dim}"
                if item not in sources:
                    sources.append(item)
            described.append(cause.description)
        elif cause.kind == "relation":
            relation = True
            fixes.append((cause.description, cause.next_step))
        elif is_buffer_size(cause):
            buffers.append(cause.description)
        else:
            fixes.append((cause.description, cause.next_step))
    if sources:
        proposals.append(ScriptProposal("dynamic_sources", {"dynamic_sources": ",".join(sources)}, "; ".join(described)))
    if buffers:
        proposals.append(ScriptProposal("buffer sizes dynamic", {"force_parameter_static_shapes": False},
                                        "; ".join(buffers)))
    refused = count_compiles(base.compiles).refused
    if refused:
        limit = max(graphs_needed(base.compiles), limit_in_force(None, base.recompile_limit)) * 2
        proposals.append(ScriptProposal(f"recompile_limit {limit}", {"recompile_limit": limit},
                                        f"{refused} compile(s) refused by the recompile limit", target="refused"))
    if sources or relation:
        proposals.append(ScriptProposal("dynamic by default", {"assume_static_by_default": False},
                                        "every varying dim at once (the broad fix the narrow ones are judged against)"))
    return proposals, fixes


def _judge(run: ScriptRun, base: ScriptRun) -> str:
    if run.error and run.error != base.error:  # a script that fails as it is may fail the same way
        return run.error
    if run.exit_code != base.exit_code:
        return f"the script exited with status {run.exit_code} (as it was: {base.exit_code})"
    if run.failed > base.failed:
        return f"{run.failed} compile(s) failed (as it was: {base.failed})"
    target = run.proposal.target if run.proposal else "compiles"
    if target == "refused":
        if run.refused >= base.refused:
            return f"did not reduce what it targets: {run.refused} refused compile(s) against {base.refused}"
        return ""
    if run.compiles >= base.compiles:
        return f"did not reduce what it targets: {run.compiles} compile(s) against {base.compiles}"
    return ""


def _measured(script: str, args: list[str], label: str, proposal: ScriptProposal | None, workdir: Path,
              run_name: str, timeout_s: float) -> tuple[ScriptRun, ProbeResult | None]:
    """The script probed once in a fresh process under ``proposal``'s settings (none: as it is)."""
    result, wall, error = probe_once(script, args, proposal.settings if proposal else {}, workdir, run_name, timeout_s)
    counts = _count(result) if result is not None else {"compiles": 0, "recompiles": 0, "refused": 0,
                                                         "failed": 0, "compile_s": 0.0}
    exit_code = result.exit_code if result is not None else -1
    return ScriptRun(label, proposal, exit_code, error or (result.error if result else None),
                     wall_s=wall, **counts), result


def judged_runs(script: str, args: list[str], proposals: list[ScriptProposal], base_run: ScriptRun, workdir: Path,
                timeout_s: float, on_progress: Any = None) -> list[ScriptRun]:
    """Each proposal run (the script re-run unmodified under its settings) and judged against
    ``base_run``: accepted only when it reduced what it targets and broke nothing."""
    rows = []
    for i, p in enumerate(proposals, start=1):
        if on_progress is not None:
            on_progress(p.name)
        run, result = _measured(script, args, p.name, p, workdir, f"run{i}", timeout_s)
        why = _overridden(p, result) or _judge(run, base_run)
        done = (f"{run.refused} refused compile(s) against {base_run.refused}, the calls past the limit compiled "
                f"instead ({run.compiles} compile(s) against {base_run.compiles})") if p.target == "refused" else \
            f"{run.compiles} compile(s) against {base_run.compiles}"
        rows.append(ScriptRun(**{**run.__dict__, "verdict": "rejected" if why else "accepted", "why": why or done}))
    return rows


def _overridden(proposal: ScriptProposal, result: ProbeResult | None) -> str:
    """Why a run did not test its setting: the script set the recompile limit itself, after
    the probe applied the proposal's (the limit in force as the script ended is another)."""
    want = proposal.settings.get("recompile_limit")
    if want is None or result is None or result.recompile_limit in (None, want):
        return ""
    return (f"not tested: the script sets the recompile limit itself ({result.recompile_limit} in force as it ended, "
            f"not {want}) — set it where the script does")


def check_fixes(script: str, args: list[str], base: ProbeResult, *, timeout_s: float = 900.0,
                on_progress: Any = None) -> tuple[ScriptRun, ...]:
    """``probe --check-fixes``: every setting-only fix of a probe's causes run and judged as
    ``advise --script`` judges its proposals, against the probe's own run (its counts)."""
    proposals, _ = propose_settings(base)
    if not proposals:
        return ()
    base_run = ScriptRun("as it is", None, base.exit_code, base.error, wall_s=0.0, **_count(base))
    with tempfile.TemporaryDirectory(prefix="compilescope-check-") as tmp:
        return tuple(judged_runs(script, args, proposals, base_run, Path(tmp), timeout_s, on_progress))


def advise_script(script: str, args: list[str], *, timeout_s: float = 900.0,
                  on_progress: Any = None) -> ScriptAdvice:
    """Run the baseline and every setting-only proposal; recommend the accepted one (it reduced
    what it targets and broke nothing) with the fewest compiles and refusals, compile seconds
    breaking a tie: the counts are exact, one run's compile seconds are not evidence beyond the
    noise (they are printed, not claimed)."""
    if not Path(script).is_file():
        raise CompilescopeError(f"script {script!r} does not exist")
    with tempfile.TemporaryDirectory(prefix="compilescope-advise-") as tmp:
        workdir = Path(tmp)
        if on_progress is not None:
            on_progress("as it is")
        base_run, base = _measured(script, args, "as it is", None, workdir, "run0", timeout_s)
        if base is None:
            raise CompilescopeError(f"the script could not be probed: {base_run.error}")
        proposals, fixes = propose_settings(base)
        rows = [base_run, *judged_runs(script, args, proposals, base_run, workdir, timeout_s, on_progress)]
    accepted = [r for r in rows if r.verdict == "accepted"]
    best = min(accepted, key=lambda r: (r.compiles + r.refused, r.compile_s), default=None)
    recommendation = None
    if best is not None:
        recommendation = ScriptRun(**{**best.__dict__, "verdict": "recommended"})
        rows = [recommendation if r is best else r for r in rows]
    return ScriptAdvice(" ".join([script, *args]), tuple(rows), tuple(fixes), recommendation)
