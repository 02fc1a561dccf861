"""The run use case: ``compilescope run`` and ``demo`` (:func:`run_workload`, :func:`resume`)
and the engine under them and ``advise``: :func:`execute_run` runs a validated plan through an
executor, each finished trial appended to the results journal at once and the results file
written before anything is rendered; :func:`resume_run` finishes an interrupted one.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..analysis.outputs import records_only, run_file
from ..errors import OptionError, ResultsError
from ..execute.executor import Executor
from ..execute.journal import Journal, JournalState, journal_path, read_journal
from ..execute.local import Interrupted, LocalExecutor
from ..execute.scheduler import CallFn, PlannedTrial, ProgressFn, plan_trials, run_plan
from ..model import DEFAULT_STRATEGIES, MarkSpec, MeasureOptions, RunResult, Shape, StrategyOptions, TrialResult, TrialSpec
from ..options import check_backend, check_device, check_writable, parse_cache_modes, parse_dynamic_sources
from ..paths import write_atomic
from ..prepare import prepare_run
from ..render import json as json_render
from ..report import RunFile, RunReport
from ..schema import from_data, to_data
from ..strategies import get_strategy
from ..workload import Workload, build_target, load_workload
from .progress import CHECKING, CHECKING_SAID_AFTER_S, SILENT, Progress, said_after, trial_hooks

DEFAULT_TIMEOUT_S = 900.0


class RunInterrupted(Exception):
    """A run stopped by SIGINT/SIGTERM/SIGHUP; the finished trials were saved."""

    def __init__(self, result: RunResult, path: Path | None, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.result, self.path, self.signum = result, path, signum


def default_results_path(workload: str) -> Path:
    """``compilescope-results/<workload>-<UTC time>.json`` when no ``--json`` is given."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", workload.rsplit(":", 1)[-1].rsplit("/", 1)[-1])[:60] or "run"
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return Path("compilescope-results") / f"{stem}-{stamp}.json"


def run(
    workload: str | Workload,
    stream: str | Sequence[Shape] | None = None,
    strategies: str | Sequence[str] = DEFAULT_STRATEGIES,
    *,
    cache: str = "cold",
    backend: str = "inductor",
    mode: str | None = None,
    marks: Sequence[MarkSpec] = (),
    recompile_limit: int | None = None,
    dynamic_sources: str | None = None,
    block: str | None = None,
    buckets: Sequence[int] = (),
    measure: MeasureOptions = MeasureOptions(),
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_progress: ProgressFn | None = None,
    command: str = "",
    lifetime: int | None = None,
    results_path: str | Path | None = None,
    executor: Executor | None = None,
) -> RunResult:
    """Run ``workload`` over ``stream`` under each strategy, one fresh process per trial.

    ``workload`` is a reference (``file.py:name``, ``package.module:name``, a built-in name)
    or a :class:`Workload` loaded from one. ``stream`` is a spec string (see
    :mod:`compilescope.stream`), a sequence of shape dicts, or ``None`` for the workload's
    default. The eager baseline is always included. With ``results_path`` each trial is
    journaled as it finishes and the results file is written at the end. ``executor`` runs
    the trials (default: a :class:`~compilescope.execute.local.LocalExecutor`; see
    :mod:`compilescope.execute.executor`).
    """
    parse_cache_modes(cache)
    options = StrategyOptions(
        backend=backend, mode=mode, marks=tuple(marks), recompile_limit=recompile_limit,
        dynamic_sources=dynamic_sources, block=block, buckets=tuple(buckets),
    )
    _, base, names = prepare_run(workload, stream, strategies, options=options, measure=measure)
    return execute_run(
        base, names, cache, timeout_s=timeout_s, on_progress=on_progress, command=command, lifetime=lifetime,
        results_path=None if results_path is None else Path(results_path), executor=executor,
    )


def _header(base: TrialSpec, names: Sequence[Any], cache: str, timeout_s: float, command: str,
            lifetime: int | None, created: str) -> dict[str, Any]:
    return {"base": to_data(base), "strategies": [n if isinstance(n, str) else list(n[:2]) + [to_data(n[2])] for n in names],
            "cache": cache, "timeout_s": timeout_s, "command": command, "lifetime": lifetime, "created": created}


def _names_from_header(header: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for item in header["strategies"]:
        if isinstance(item, str):
            out.append(item)
        else:
            name, variant, options = item
            out.append((name, variant, from_data(StrategyOptions, options)))
    return out


def _assemble(base: TrialSpec, plan: list[PlannedTrial], got: dict[TrialSpec, TrialResult], command: str,
              lifetime: int | None, created: str) -> RunResult:
    reported = [p for p in plan if p.report]
    return RunResult(
        workload=base.workload,
        stream=base.stream,
        trials=tuple(got[p.spec] for p in reported if p.spec in got),
        created=created,
        command=command,
        lifetime=lifetime,
        missing=tuple(p.spec.label for p in reported if p.spec not in got or got[p.spec].status == "interrupted"),
    )


def write_results(result: RunResult, path: Path) -> None:
    """The results file, atomically, with the derived summary beside the records."""
    try:
        text = json_render.render(run_file(result))
    except Exception:  # never lose records to a fault in analysis: write them bare
        text = json_render.render(records_only(result))
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise ResultsError(f"cannot write {path}: {exc.strerror}") from None


def execute_run(
    base: TrialSpec,
    names: Sequence[Any],
    cache: str,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_progress: ProgressFn | None = None,
    command: str = "",
    lifetime: int | None = None,
    results_path: Path | None = None,
    resume: JournalState | None = None,
    executor: Executor | None = None,
    on_call: CallFn | None = None,
) -> RunResult:
    """Run a validated plan (see :func:`prepare_run`): one fresh process per trial, through
    ``executor`` (default: local subprocesses, one at a time). ``on_progress``/``on_call``:
    the scheduler's callbacks (see :func:`compilescope.execute.scheduler.run_plan`).

    With ``results_path``, each finished trial is appended to the journal beside it, and
    the results file is written when the run ends — or is interrupted, in which case
    :class:`RunInterrupted` is raised after saving (the journal stays for ``resume``)."""
    created = resume.header.get("created", "") if resume else _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    if not (isinstance(timeout_s, (int, float)) and 0 < timeout_s < math.inf):  # a nan one turns the watchdog off
        raise OptionError(f"timeout {timeout_s!r}: a finite number of seconds, more than 0")
    if results_path is not None:
        check_writable(results_path, "results")
        check_writable(journal_path(results_path), "journal")
    plan = plan_trials(base, names, cache)
    got: dict[TrialSpec, TrialResult] = {}
    if resume is not None:
        for t in resume.trials:
            if t.status != "interrupted":
                got[t.spec] = t
    journal = Journal(results_path) if results_path is not None else None
    if journal is not None and resume is None:
        journal.start(_header(base, names, cache, timeout_s, command, lifetime, created))

    def on_result(trial: PlannedTrial, result: TrialResult) -> None:
        got[trial.spec] = result
        if journal is not None:
            journal.append(result)

    try:
        run_plan(plan, executor or LocalExecutor(), timeout_s, on_progress=on_progress, on_result=on_result,
                 on_call=on_call, done=tuple(got))
    except (KeyboardInterrupt, Interrupted) as exc:
        import signal

        signum = exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)
        result = _assemble(base, plan, got, command, lifetime, created)
        if results_path is not None:
            write_results(result, results_path)
        raise RunInterrupted(result, results_path, signum) from None
    result = _assemble(base, plan, got, command, lifetime, created)
    if results_path is not None:
        write_results(result, results_path)
        if journal is not None and not result.missing:  # the journal goes only with a finished run
            journal.remove()
    return result


def _check_resumable(results_path: Path, base: TrialSpec, names: Sequence[Any]) -> None:
    """What a fresh run checks before its first trial, for the run a journal describes: the
    workload still loads and builds, its backend(s), device and dynamic sources still apply."""
    from ..errors import CompilescopeError

    try:
        loaded = load_workload(base.workload)
        check_device(base.measure.device)
        for options in [base.options, *(n[2] for n in names if not isinstance(n, str))]:
            check_backend(options.backend)
            parse_dynamic_sources(options.dynamic_sources)
        build_target(loaded)
    except CompilescopeError as exc:
        raise type(exc)(f"cannot resume {results_path}: {exc}") from None


def resume_run(results_path: Path, *, on_progress: ProgressFn | None = None,
               executor: Executor | None = None, on_call: CallFn | None = None) -> RunResult:
    """Finish an interrupted run: re-run only the trials its journal does not hold."""
    jpath = journal_path(results_path)
    if not jpath.exists():
        if results_path.exists():
            from ..schema import load

            load(results_path)  # a file that is no results file says so, in one line
            raise OptionError(f"nothing to resume: {results_path} is complete (no journal beside it)")
        raise OptionError(f"nothing to resume: neither {results_path} nor its journal exists")
    state = read_journal(jpath)
    try:
        base = from_data(TrialSpec, state.header["base"])
        names = _names_from_header(state.header)
        for n in names:
            get_strategy(n if isinstance(n, str) else n[0])
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsError(f"{jpath} has an unreadable run description: {exc}") from None
    _check_resumable(results_path, base, names)  # the journal is kept whatever fails here
    return execute_run(
        base, names, str(state.header.get("cache", "cold")), timeout_s=float(state.header.get("timeout_s", DEFAULT_TIMEOUT_S)),
        on_progress=on_progress, command=str(state.header.get("command", "")), lifetime=state.header.get("lifetime"),
        results_path=results_path, resume=state, executor=executor, on_call=on_call,
    )


def variant(strategy: str, name: str, options: StrategyOptions) -> tuple[str, str, StrategyOptions]:
    """A strategy run with its own options under a variant name, e.g. ``variant("mark-dynamic",
    "x:0", StrategyOptions(marks=(MarkSpec("x", 0),)))``; pass it among ``names`` to
    :func:`execute_run` to run two variants of one strategy side by side."""
    get_strategy(strategy)
    return (strategy, name, options)


# ------------------------------------------------------------------------ the commands' use cases

ExecutorStart = Callable[[], Executor]  # starts the executor once the input is known to be good
EXIT_FAILED = 1


def run_workload(
    workload: str,
    stream: str | None,
    strategies: str,
    *,
    results: Path,
    cache: str = "cold",
    options: StrategyOptions = StrategyOptions(),
    measure: MeasureOptions = MeasureOptions(),
    timeout_s: float = DEFAULT_TIMEOUT_S,
    lifetime: int | None = None,
    command: str = "",
    executor: ExecutorStart | None = None,
    progress: Progress = SILENT,
) -> RunFile:
    """``compilescope run``: ``workload`` over ``stream`` under each strategy, each trial saved
    in ``results``' journal as it finishes and the results file written at the end; returns
    what the results file holds (the records and their report). Bad input raises a
    :class:`~compilescope.errors.CompilescopeError` before the first trial."""
    with said_after(progress, CHECKING_SAID_AFTER_S, CHECKING):
        _, base, names = prepare_run(workload, stream, strategies, options=options, measure=measure)
    total = len(plan_trials(base, names, cache))
    runner = executor() if executor is not None else None
    progress.note(f"results: {results} (each trial is saved as it finishes)", "dim")
    result = _watched(progress, total, lambda on_progress, on_call: execute_run(
        base, names, cache, timeout_s=timeout_s, on_progress=on_progress, on_call=on_call, command=command,
        lifetime=lifetime, results_path=results, executor=runner))
    progress.note(f"results: {results}")
    return run_file(result)


def resume(results: Path, *, executor: ExecutorStart | None = None, progress: Progress = SILENT) -> RunFile:
    """``compilescope run --resume``: finish the interrupted run whose journal is beside
    ``results``; returns what the results file holds."""
    progress.note(f"resuming {results}", "dim")
    runner = executor() if executor is not None else None
    result = _watched(progress, None, lambda on_progress, on_call: resume_run(
        results, on_progress=on_progress, on_call=on_call, executor=runner))
    progress.note(f"results: {results}")
    return run_file(result)


def _watched(progress: Progress, total: int | None, work: Callable[[ProgressFn, CallFn], Any]) -> Any:
    """Run ``work`` with the scheduler's callbacks telling ``progress``, between its begin and end."""
    progress.begin(total)
    try:
        return work(*trial_hooks(progress))
    finally:
        progress.end()


def failure(report: RunReport | None, fail_on: frozenset[str] = frozenset()) -> str | None:
    """Why the command fails, in one line, or None: the run was interrupted (trials missing);
    every compiled trial failed (a trial whose
    every request raised included), or ran no request compiled (each ran eagerly or raised),
    or, in a run of no compiled trial, every trial failed; or under ``--fail-on``: crash (a trial failed or timed
    out, or any request raised), numerics, fallback (a request ran eagerly, wholly or partly)."""
    if report is None:
        return None
    if report.missing:  # an interrupted run: what it did not finish passes no gate
        done = sum(1 for t in report.trials if t.status != "interrupted")
        return (f"the run was interrupted: {done} of {done + len(report.missing)} trial(s) finished "
                f"(compilescope run --resume finishes it)")
    compiled = [t for t in report.trials if t.compiles_code and t.status != "unavailable"]
    if compiled and all(t.status not in ("ok", "partial") for t in compiled):
        return f"every compiled trial failed ({', '.join(f'{t.label}: {t.status}' for t in compiled)})"
    ran = [t for t in report.trials if t.status != "unavailable"]
    if not compiled and ran and all(t.status not in ("ok", "partial") for t in ran):
        return f"every trial failed ({', '.join(f'{t.label}: {t.status}' for t in ran)})"
    if compiled and all(t.completed and t.fallbacks + t.call_errors >= t.completed for t in compiled):
        # nothing compiled ran: a frame that never compiles (its compile failed) measures eager against eager
        return ("no compiled trial ran a compiled graph: every request ran eagerly or raised ("
                + ", ".join(f"{t.label}: {t.fallbacks} of {t.completed} eager" for t in compiled) + ")")
    crashed = [t for t in report.trials if t.status in ("failed", "timeout", "partial") or t.call_errors]
    if "crash" in fail_on and crashed:
        return "--fail-on crash: " + ", ".join(
            f"{t.label}: {t.status}" + (f", {t.call_errors} request(s) raised" if t.call_errors else "") for t in crashed)
    wrong = [t for t in report.trials if t.numerics_failed]
    if "numerics" in fail_on and wrong:
        return "--fail-on numerics: " + ", ".join(
            f"{t.label}: outputs differed from eager on {t.numerics_failed} shape(s)" for t in wrong)
    eager = [t for t in report.trials if t.fallbacks or t.partial_fallbacks]
    if "fallback" in fail_on and eager:
        return "--fail-on fallback: " + ", ".join(
            f"{t.label}: {t.fallbacks} request(s) ran eagerly"
            + (f", {t.partial_fallbacks} partly" if t.partial_fallbacks else "") for t in eager)
    return None


def exit_status(report: RunReport | None, fail_on: frozenset[str] = frozenset()) -> int:
    """1 when :func:`failure` names a reason, else 0."""
    return EXIT_FAILED if failure(report, fail_on) is not None else 0
