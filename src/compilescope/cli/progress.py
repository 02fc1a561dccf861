"""Progress as a command shows it, so that slow is never taken for hung: on a terminal a live
line (spinner, the trial or dry run now running, its phase and request i/N, the time it has
taken, a bar of the steps done, the time in all); in a log or a pipe, a plain line on stderr
every :data:`EVERY_S` seconds while work runs. Each trial's end is a line of the report's
console either way (✓ only for a trial where nothing raised and nothing ran eagerly)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from ..app.progress import Progress as Watcher
from ..render.grid import one_line
from ..units import fmt_time
from .common import output_width, say

if TYPE_CHECKING:  # nothing more at import: the CLI's --help imports this module
    from ..report.progress import Tally, TrialDone

EVERY_S = 5.0  # off a terminal: a plain progress line this often while work runs


def trial_line(done: TrialDone) -> Text:
    """A finished trial's line: ✗ and its status when it failed or a request raised, ! when it
    ran but not all of it compiled or its outputs differed from eager's, ✓ only otherwise."""
    line = Text("  ")
    if not done.ok:
        line.append(f"✗ {done.status}", style="red")
    elif done.fell_back:
        line.append("! eager fallback", style="red")
    elif done.wrong:
        line.append("! wrong outputs", style="red")
    else:
        line.append("✓", style="green")
    line.append(f" {done.label}" + (f" {done.process_s:.1f} s" if done.process_s is not None else ""))
    if not done.ok and done.error:
        line.append(f" — {done.error}", style="red")
    elif not done.ok:
        line.append(f" — {done.errors} of {done.requests} requests raised", style="red")
    if done.fell_back:
        parts = [f"{done.eager} request(s) ran eagerly"] if done.eager else []
        parts += [f"{done.partly} ran partly eagerly"] if done.partly else []
        line.append(" — " + ", ".join(parts), style="red")
    if done.ok and done.wrong:
        line.append(f" — outputs differed from eager on {done.wrong} of {done.checked} shape(s)", style="red")
    return line


def tally_line(done: TrialDone, tally: Tally) -> Text:
    """A trial's line in a batch (a sweep): where the batch stands, then the trial and how its
    process ended."""
    left = f" · ~{fmt_time(tally.left_s)} left" if tally.left_s else ""
    line = Text(f"[{tally.done}/{tally.total} done · {tally.running} running · {tally.failed} failed{left}] ", "dim")
    line.append(f"{one_line(done.workload)} {done.label} ")
    line.append(done.ended, "green" if done.ended == "ok" else "red")
    if done.error:
        line.append(f": {done.error}")
    return line


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class _Since(ProgressColumn):
    """How long the step now running has taken (a task field ``since``, monotonic seconds)."""

    def render(self, task: Any) -> Text:
        since = task.fields.get("since")
        return Text("" if since is None else _clock(time.monotonic() - since), style="progress.elapsed")


class ConsoleProgress(Watcher):
    """A use case's progress on ``console`` (its notes and finished trials) with a live line on
    a terminal, else a plain line on ``log`` (stderr) every :data:`EVERY_S` seconds."""

    def __init__(self, console: Console, *, live: bool | None = None, log: Console | None = None,
                 every_s: float | None = None) -> None:
        self.console = console
        self.live = console.is_terminal if live is None else live
        self.log = log if log is not None else Console(stderr=True, width=output_width(sys.stderr))
        self.every_s = EVERY_S if every_s is None else every_s
        self._last_line = 0.0
        self._lock = threading.Lock()
        self._bar: Progress | None = None
        self._task: Any = None
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._began = 0.0
        self._total: int | None = None
        self._unit = "trials"
        self._done = 0
        self._now: tuple[str, str, int | None, int | None] | None = None  # label, phase, done, total
        self._since = 0.0

    def note(self, text: str, style: str = "") -> None:
        say(self.console, text, style)

    def status(self, text: str) -> None:
        """On a terminal beside the live line; else on the log (stderr), never in the report."""
        say(self.console if self.live else self.log, text, "dim")

    def begin(self, total: int | None, unit: str = "trials") -> None:
        with self._lock:
            self._total, self._unit, self._done, self._now = total, unit, 0, None
            self._began = self._since = self._last_line = time.monotonic()
        if self.live:
            self._bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), _Since(), BarColumn(),
                                 TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                                 console=self.console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task("starting", total=total, since=None)
        elif self.every_s > 0:
            self._stop.clear()
            self._ticker = threading.Thread(target=self._tick, name="compilescope-progress", daemon=True)
            self._ticker.start()

    def working(self, label: str, phase: str, done: int | None = None, total: int | None = None) -> None:
        with self._lock:
            if self._now is None or self._now[0] != label:
                self._since = time.monotonic()
            self._now = (label, phase, done, total)
            since = self._since
        if self._bar is not None:
            self._bar.update(self._task, description=escape(self._doing(label, phase, done, total)), since=since)
        elif not self.live:
            self._plain_line()

    def finished(self, label: str, trial: TrialDone | None = None, tally: Tally | None = None) -> None:
        with self._lock:
            self._done += 1
            if self._now is not None and self._now[0] == label:
                self._now = None
        if self._bar is not None:
            self._bar.advance(self._task)
        if trial is not None:
            self.console.print(trial_line(trial) if tally is None else tally_line(trial, tally))

    def end(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
        self._now = None
        self._last_line = float("inf")  # no line after the work ended

    @staticmethod
    def _doing(label: str, phase: str, done: int | None, total: int | None) -> str:
        from ..analysis.progress import REQUESTS

        if phase == REQUESTS and total:
            return f"{label}: request {done}/{total}"
        return f"{label}: {phase}"

    def line(self) -> str:
        """The plain progress line: the time in all, what runs now (for how long), the steps done."""
        with self._lock:
            now, since, done, total, unit = self._now, self._since, self._done, self._total, self._unit
            began = self._began
        clock = time.monotonic()
        steps = f"{done}/{total} {unit} done" if total is not None else f"{unit} done: {done}"  # no "1 runs"
        doing = f"{self._doing(*now)} ({_clock(clock - since)}) · " if now is not None else ""
        return f"[{_clock(clock - began)}] {doing}{steps}"

    def _plain_line(self) -> None:
        """Off a terminal: the progress line, when :attr:`every_s` has passed since the last."""
        with self._lock:
            now = time.monotonic()
            if now - self._last_line < self.every_s:
                return
            self._last_line = now
        self.log.print(Text(self.line(), style="dim"), soft_wrap=True)  # one line in a log, however long

    def _tick(self) -> None:  # a line even while nothing reports: a long compile is not silence
        while not self._stop.wait(self.every_s):
            self._plain_line()
