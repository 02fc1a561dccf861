"""Run trials in fresh Python processes, one per (strategy, cache mode).

Cold means a fresh process on an empty ``TORCHINDUCTOR_CACHE_DIR``; warm means a fresh
process on the directory a previous process of the same strategy populated. A trial that
crashes, raises, or runs past its timeout is recorded as failed with the tail of its
stderr; the remaining trials still run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..model import TrialResult, TrialSpec
from ..schema import ResultsError, from_data, to_data

STDERR_TAIL_CHARS = 4000


START_MODES = ("cold", "warm", "mega")


def parse_cache_modes(text: str) -> tuple[str, ...]:
    """``cold``, ``warm``, ``mega``, a comma list of them, ``both`` (cold,warm) or ``all``."""
    from ..errors import StrategyError

    aliases = {"both": ("cold", "warm"), "all": START_MODES}
    modes: list[str] = []
    for token in (t.strip() for t in text.split(",") if t.strip()):
        for mode in aliases.get(token, (token,)):
            if mode not in START_MODES:
                raise StrategyError(f"unknown cache mode {token!r} (use cold, warm, mega, both or all)")
            if mode not in modes:
                modes.append(mode)
    if not modes:
        raise StrategyError("no cache mode given")
    return tuple(m for m in START_MODES if m in modes)


@dataclass(frozen=True)
class PlannedTrial:
    """A trial to run; ``report`` is False for a pass that only populates a cache.
    ``save_artifacts``/``load_artifacts`` carry the mega-cache between processes."""

    spec: TrialSpec
    cache_dir: str
    report: bool = True
    save_artifacts: str | None = None
    load_artifacts: str | None = None

    @property
    def label(self) -> str:
        s = self.spec
        if not self.report:
            return f"{s.strategy}: populating cache"
        return s.strategy if s.cache == "none" else f"{s.strategy} ({s.cache} cache)"


def plan_trials(base: TrialSpec, strategies: Iterable[str], cache: str, cache_root: Path) -> list[PlannedTrial]:
    """Eager once (cache does not apply), then each compiled strategy in the asked start modes.

    Warm and mega-cache starts need a cold run of the same strategy first: it is reported
    when cold was asked for, and otherwise runs stream-only to populate the cache.
    """
    from ..strategies import get_strategy

    modes = parse_cache_modes(cache)
    plan: list[PlannedTrial] = []
    for name in strategies:
        strategy = get_strategy(name)
        cache_dir = str(cache_root / name)
        spec = dataclasses.replace(base, strategy=name)
        if not strategy.compiles:
            plan.append(PlannedTrial(dataclasses.replace(spec, cache="none"), cache_dir))
            continue
        artifacts = str(cache_root / f"{name}.artifacts") if "mega" in modes else None
        cold = dataclasses.replace(spec, cache="cold")
        if "cold" in modes:
            plan.append(PlannedTrial(cold, cache_dir, save_artifacts=artifacts))
        else:
            populate = dataclasses.replace(cold, measure=dataclasses.replace(spec.measure, steady=False, numerics=False))
            plan.append(PlannedTrial(populate, cache_dir, report=False, save_artifacts=artifacts))
        if "warm" in modes:
            plan.append(PlannedTrial(dataclasses.replace(spec, cache="warm"), cache_dir))
        if "mega" in modes:
            mega_dir = str(cache_root / f"{name}-mega")
            plan.append(PlannedTrial(dataclasses.replace(spec, cache="mega"), mega_dir, load_artifacts=artifacts))
    return plan


def _tail(text: str) -> str:
    return text[-STDERR_TAIL_CHARS:]


def run_in_subprocess(trial: PlannedTrial, timeout_s: float, workdir: Path) -> TrialResult:
    spec = trial.spec
    workdir.mkdir(parents=True, exist_ok=True)
    spec_path = workdir / "spec.json"
    result_path = workdir / "result.json"
    spec_path.write_text(json.dumps(to_data(spec)))
    result_path.unlink(missing_ok=True)
    Path(trial.cache_dir).mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = trial.cache_dir
    env["COMPILESCOPE_LAUNCHED_AT"] = repr(time.time())
    env.pop("COMPILESCOPE_SAVE_ARTIFACTS", None)
    env.pop("COMPILESCOPE_LOAD_ARTIFACTS", None)
    if trial.save_artifacts:
        env["COMPILESCOPE_SAVE_ARTIFACTS"] = trial.save_artifacts
    if trial.load_artifacts:
        if not Path(trial.load_artifacts).exists():
            return TrialResult(
                spec, "unavailable",
                error="no cache artifacts to load: the cold run failed or torch.compiler.save_cache_artifacts() "
                      "returned none",
            )
        env["COMPILESCOPE_LOAD_ARTIFACTS"] = trial.load_artifacts
    if spec.measure.threads is not None:
        env["OMP_NUM_THREADS"] = str(spec.measure.threads)
    cmd = [sys.executable, "-m", "compilescope.execute.worker", str(spec_path), str(result_path)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return TrialResult(
            spec, "timeout", error=f"trial ran past --timeout {timeout_s:g} s and was killed",
            stderr_tail=_tail(err), process_s=time.perf_counter() - started,
        )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0 or not result_path.exists():
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit status {proc.returncode}"
        how = f"exit status {proc.returncode}" if proc.returncode >= 0 else f"killed by signal {-proc.returncode}"
        return TrialResult(
            spec, "failed", error=f"trial process failed ({how}): {last}"[:500],
            stderr_tail=_tail(proc.stderr), process_s=elapsed,
        )
    try:
        result: TrialResult = from_data(TrialResult, json.loads(result_path.read_text()))
    except (ValueError, ResultsError) as exc:
        return TrialResult(spec, "failed", error=f"unreadable trial result: {exc}", stderr_tail=_tail(proc.stderr))
    return result


ProgressFn = Callable[[PlannedTrial, TrialResult | None], None]


def run_planned(
    plan: list[PlannedTrial],
    timeout_s: float,
    on_progress: ProgressFn | None = None,
    scratch: Path | None = None,
) -> list[TrialResult]:
    """Run each planned trial in its own process; return the reported ones, in plan order."""
    results: list[TrialResult] = []
    with tempfile.TemporaryDirectory(prefix="compilescope-trial-") as tmp:
        root = scratch or Path(tmp)
        for i, trial in enumerate(plan):
            if on_progress:
                on_progress(trial, None)
            result = run_in_subprocess(trial, timeout_s, root / f"trial-{i}")
            if on_progress:
                on_progress(trial, result)
            if trial.report:
                results.append(result)
    return results
