"""A slow step before any trial (a workload's build()) is said once it has taken a while; a
quick one says nothing."""

from __future__ import annotations

import threading

from compilescope.app.progress import Progress, said_after


class _Notes(Progress):
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.said = threading.Event()

    def status(self, text: str) -> None:
        self.notes.append(text)
        self.said.set()


def test_a_slow_block_is_said_and_a_quick_one_is_not():
    slow = _Notes()
    with said_after(slow, 0.01, "still going"):
        assert slow.said.wait(30)  # the block runs until the note came
    assert slow.notes == ["still going"]
    quick = _Notes()
    with said_after(quick, 30.0, "still going"):
        pass
    assert not quick.said.wait(0.05) and quick.notes == []


def test_off_a_terminal_the_status_goes_to_stderr_never_into_the_report():
    """Piped, the report is stdout's and a progress word goes to stderr (before, the
    "still going" line landed in a redirected report)."""
    import io

    from rich.console import Console

    from compilescope.cli.progress import ConsoleProgress

    report, log = io.StringIO(), io.StringIO()
    progress = ConsoleProgress(Console(file=report), live=False, log=Console(file=log))
    progress.status("checking the workload — still going")
    progress.note("results: r.json")
    assert report.getvalue() == "results: r.json\n" and log.getvalue() == "checking the workload — still going\n"
