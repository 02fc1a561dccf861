"""The plan of a run, the local executor (one fresh subprocess per trial) and the driver.

Cold means a fresh process on an empty ``TORCHINDUCTOR_CACHE_DIR``; warm means a fresh
process on the directory its strategy's cold trial populated; mega means an empty directory
plus the cold trial's ``torch.compiler.save_cache_artifacts()`` bytes. A trial that raises,
exits, is killed by a signal or runs past its timeout is recorded as such with every call
it finished and its stderr tail apart; the other trials still run. An interrupt (SIGINT,
SIGTERM, SIGHUP) kills the running trial's whole process group, removes temporary
directories and keeps every finished trial.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..model import Shape, TrialResult, TrialSpec, shape_label
from ..options import parse_cache_modes
from ..schema import ResultsError, from_data
from .task import CallCallback, Progress, TrialOutcome, TrialTask
from .worker import RUN_DIR, host_tag, run_dir_prefix

STDERR_TAIL_CHARS = 4000
KILL_GRACE_S = 2.0


class Interrupted(BaseException):
    """Raised in the driver by SIGTERM/SIGHUP (SIGINT raises KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@dataclass(frozen=True)
class PlannedTrial:
    """A trial to run. ``report`` is False for a pass that only populates a cache;
    ``after`` is the cold trial this one starts from (warm: its cache directory, mega: its
    artifacts); ``cache_key`` names the cache directory the strategy's trials share."""

    spec: TrialSpec
    cache_key: str
    report: bool = True
    save_artifacts: bool = False
    after: TrialSpec | None = None

    @property
    def label(self) -> str:
        if not self.report:
            return f"{self.spec.name}: populating cache"
        return self.spec.label


def plan_trials(base: TrialSpec, strategies: Iterable[str | tuple[str, str, object]], cache: str) -> list[PlannedTrial]:
    """Eager once (cache does not apply), then each compiled strategy in the asked start modes.

    ``strategies`` holds names, or (name, variant, options) for a variant of a strategy.
    Warm and mega-cache starts need a cold run of the same strategy first: it is reported
    when cold was asked for, and otherwise runs stream-only to populate the cache.
    """
    from ..strategies import get_strategy

    modes = parse_cache_modes(cache)
    plan: list[PlannedTrial] = []
    for item in strategies:
        if isinstance(item, str):
            spec = dataclasses.replace(base, strategy=item)
        else:
            name, variant, options = item
            spec = dataclasses.replace(base, strategy=name, variant=variant, options=options)  # type: ignore[arg-type]
        strategy = get_strategy(spec.strategy)
        key = cache_key(spec.name)
        if not strategy.compiles:
            plan.append(PlannedTrial(dataclasses.replace(spec, cache="none"), key))
            continue
        cold = dataclasses.replace(spec, cache="cold")
        mega = "mega" in modes
        if "cold" in modes:
            plan.append(PlannedTrial(cold, key, save_artifacts=mega))
        elif "warm" in modes or mega:
            populate = dataclasses.replace(cold, measure=dataclasses.replace(spec.measure, steady=False, numerics=False))
            plan.append(PlannedTrial(populate, key, report=False, save_artifacts=mega))
            cold = populate
        if "warm" in modes:
            plan.append(PlannedTrial(dataclasses.replace(spec, cache="warm"), key, after=cold))
        if mega:
            plan.append(PlannedTrial(dataclasses.replace(spec, cache="mega"), f"{key}-mega", after=cold))
    return plan


def cache_key(name: str) -> str:
    """A directory name for a strategy's compile cache: letters, digits, ``._-`` only (inductor
    passes the cache path to g++ unquoted: a space or a bracket in it breaks every compile),
    with a short hash so two variants never share one."""
    import hashlib
    import re

    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:48] or "trial"
    return f"{safe}-{hashlib.sha1(name.encode()).hexdigest()[:8]}" if safe != name else safe


def _tail(text: str) -> str:
    return text[-STDERR_TAIL_CHARS:]


def _where(stream: tuple[Shape, ...], done: int) -> str:
    if done < len(stream):
        return f"at request {done} ({shape_label(stream[done])})"
    return "after the stream (steady-state / numerics phase)"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """End a trial process and everything it started (it leads its own process group)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class LocalExecutor:
    """Each task in a fresh ``python -m compilescope.execute.worker`` process of its own
    process group; records stream back over a pipe as each call finishes."""

    def run(self, task: TrialTask, *, timeout_s: float, on_call: CallCallback | None = None) -> TrialOutcome:
        spec = task.spec
        Path(task.cache_dir).mkdir(parents=True, exist_ok=True)
        task = dataclasses.replace(task, launched_at=time.time())
        read_fd, write_fd = os.pipe()
        progress = Progress()
        final: dict[str, object] = {}
        with tempfile.TemporaryFile() as errfile:
            started = time.perf_counter()
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "compilescope.execute.worker", str(write_fd), str(os.getpid())],
                    stdin=subprocess.PIPE, stdout=errfile, stderr=errfile, pass_fds=(write_fd,),
                    start_new_session=True,
                )
            finally:
                os.close(write_fd)
            reader = threading.Thread(target=_read_events, args=(read_fd, progress, final, on_call), daemon=True)
            reader.start()
            timed_out = False
            try:
                assert proc.stdin is not None
                try:
                    proc.stdin.write(task.to_json().encode())
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
            finally:
                kill_group(proc)  # no-op when it exited; on an interrupt it ends the trial
            reader.join(5.0)
            elapsed = time.perf_counter() - started
            errfile.seek(0)
            stderr = errfile.read().decode(errors="replace")
        partial = dict(
            calls=tuple(progress.calls), compiles=tuple(progress.compiles), graph_breaks=tuple(progress.graph_breaks),
            stderr_tail=_tail(stderr), process_s=elapsed, env={"pid": str(proc.pid), "host": platform.node()},
        )
        where = _where(spec.stream, len(progress.calls))
        if timed_out:
            return TrialOutcome(TrialResult(
                spec, "timeout", error=f"timed out after {timeout_s:g} s {where} and was killed", **partial,  # type: ignore[arg-type]
            ))
        if "result" in final:
            try:
                result: TrialResult = from_data(TrialResult, final["result"])
            except ResultsError as exc:
                return TrialOutcome(TrialResult(spec, "failed", error=f"unreadable trial result: {exc}", **partial))  # type: ignore[arg-type]
            blob = final.get("artifacts")
            import base64

            return TrialOutcome(result, base64.b64decode(blob) if isinstance(blob, str) else None)
        rc = proc.returncode
        how = f"exited with status {rc}" if rc is not None and rc >= 0 else f"killed by signal {_signal_name(-(rc or 0))}"
        last = _last_error_line(stderr)
        error = f"trial process {how} {where}" + (f": {last}" if last else "")
        return TrialOutcome(TrialResult(spec, "failed", error=error[:600], **partial))  # type: ignore[arg-type]


def _last_error_line(stderr: str) -> str | None:
    """The exception line of a Python traceback in stderr, if there is one (not a warning's
    source line)."""
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if "Traceback (most recent call last):" not in stderr:
        return None
    for line in reversed(lines):
        if not line.startswith((" ", "\t")) and ":" in line:
            return line.strip()[:300]
    return None


def _read_events(fd: int, progress: Progress, final: dict[str, object], on_call: CallCallback | None) -> None:
    from ..model import CallRecord, CompileRecord, GraphBreak

    with os.fdopen(fd, "r", errors="replace") as stream:
        for line in stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a torn last line from a dying worker
            if not isinstance(event, dict):
                continue
            if "result" in event:
                final.update(event)
                continue
            try:
                call = from_data(CallRecord, event.get("call"))
                progress.compiles.extend(from_data(tuple[CompileRecord, ...], event.get("compiles") or []))
                progress.graph_breaks.extend(from_data(tuple[GraphBreak, ...], event.get("graph_breaks") or []))
            except ResultsError:
                continue
            progress.calls.append(call)
            if on_call is not None:
                on_call(call)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's
    return True


def remove_orphaned_dirs(root: str | None = None) -> list[Path]:
    """Remove temporary cache directories whose run died without removing them (SIGKILL):
    ``compilescope-cache-PID-HOST-…`` (``-sweep-``, ``-ray-``) of this host and a PID that no
    longer runs. A live run's directories, and other hosts', are never touched."""
    import shutil

    removed: list[Path] = []
    base = Path(root or tempfile.gettempdir())
    try:
        entries = list(base.iterdir())
    except OSError:
        return removed
    host = host_tag()
    for entry in entries:
        m = RUN_DIR.fullmatch(entry.name)
        if m is None or m["host"] != host or int(m["pid"]) == os.getpid() or _alive(int(m["pid"])):
            continue
        if entry.is_symlink() or not entry.is_dir():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


ProgressFn = Callable[[PlannedTrial, "TrialResult | None"], None]
ResultFn = Callable[[PlannedTrial, TrialResult], None]


def run_planned(
    plan: list[PlannedTrial],
    timeout_s: float,
    *,
    executor: LocalExecutor | None = None,
    on_progress: ProgressFn | None = None,
    on_result: ResultFn | None = None,
    done: Iterable[TrialSpec] = (),
) -> list[TrialResult]:
    """Run each planned trial through ``executor``; return the reported ones, in plan order.

    ``done`` are trials already finished (a resumed run): they are skipped, and a cold
    trial that only they depended on is not re-run. ``on_result`` sees each reported trial
    the moment it finishes (the journal appends it there). Temporary cache directories are
    removed whatever happens, an interrupt included.
    """
    executor = executor or LocalExecutor()
    finished = set(done)
    needed = {p.after for p in plan if p.report and p.spec not in finished and p.after is not None}
    results: list[TrialResult] = []
    artifacts: dict[TrialSpec, bytes | None] = {}
    remove_orphaned_dirs()
    with tempfile.TemporaryDirectory(prefix=run_dir_prefix("cache")) as cache_root:
        for trial in plan:
            if trial.spec in finished and trial.spec not in needed:
                continue
            if trial.after is not None and trial.spec.cache == "mega" and artifacts.get(trial.after) is None:
                result = TrialResult(
                    trial.spec, "unavailable",
                    error="no cache artifacts to load: the cold run failed or torch.compiler.save_cache_artifacts() "
                          "returned none",
                )
                results.append(result)
                if on_result:
                    on_result(trial, result)
                continue
            task = TrialTask(
                spec=trial.spec,
                cache_dir=str(Path(cache_root) / trial.cache_key),
                save_artifacts=trial.save_artifacts,
                load_artifacts=artifacts.get(trial.after) if trial.spec.cache == "mega" and trial.after else None,
            )
            if on_progress:
                on_progress(trial, None)
            outcome = executor.run(task, timeout_s=timeout_s)
            artifacts[trial.spec] = outcome.artifacts
            if on_progress:
                on_progress(trial, outcome.result)
            if trial.report and trial.spec not in finished:
                results.append(outcome.result)
                if on_result:
                    on_result(trial, outcome.result)
    return results
