"""Command line: ``compilescope run|demo|advise|report|sweep|compare|probe|forecast|warmup``.
Each command is a module here that parses its options, calls its use case
(:mod:`compilescope.app`) and renders the report it returns; the options they share are
defined once (:mod:`.options`), and so is the way a report is shown (:mod:`.common`). Bad
input → one line on stderr, exit 2; an interrupted run saves what finished and exits 128 +
the signal.

Only click, rich and the torch-free modules are imported here: torch (and everything that
imports it) is imported inside the commands, so ``--help``, ``--version`` and shell completion
answer at once."""

from __future__ import annotations

import errno
import os
import shlex
import sys
from typing import Any

import click

from ..errors import CompilescopeError
from . import advise, compare, demo, forecast, probe, report, run, sweep, warmup  # noqa: F401  (each registers its command)
from .common import EXIT_FAILED, EXIT_USAGE, INVOKED, PIPE_WIDTH, output_width  # noqa: F401  (the CLI's conventions)
from .options import FORMAT_HELP  # noqa: F401
from .probe import IGNORED_AT_START
from .root import cli


def _install_signal_handlers() -> None:
    """SIGINT, SIGTERM and SIGHUP end a run the same way: the running trial is killed,
    finished trials are saved, and the way to resume is printed. SIGINT is installed
    explicitly too: a process started in the background by a shell inherits it ignored."""
    import signal

    from ..execute.local import Interrupted

    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            if signal.getsignal(sig) == signal.SIG_IGN:
                IGNORED_AT_START.add(sig)
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread, or not supported
            pass


class _NeverRaised(Exception):
    pass


def _loaded(module: str, name: str) -> type[BaseException]:
    """The exception class ``name`` of ``compilescope.<module>`` when that module was imported,
    else a class nothing raises: an exception of a module never imported was never raised, and
    main() imports nothing heavy to catch it."""
    found = sys.modules.get(f"compilescope.{module}")
    return getattr(found, name) if found is not None else _NeverRaised


class _ReaderMayLeave:
    """Standard output or error for a reader that may stop reading (``compilescope run … |
    head -1``, ``2>&1 | head``): a write or flush after the pipe closed sends the rest to the
    null device instead of raising into the command, so a run goes on to the end and saves
    every trial, and the command exits with its own status (click, or rich, alone would end it
    at once with status 1, the run's last results left in its journal). Everything else is the
    stream's own. ``reader_may_leave_of`` is the stream it wraps: a program ``probe`` runs gets
    that one back (:func:`compilescope.probe.launch.run_probed`), as it would have it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.reader_may_leave_of = stream

    def _gone(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._stream.fileno())  # what is still buffered goes there too
        finally:
            os.close(null)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _ended(code: int, program: bool) -> int:
    """An interrupted command's exit status. When this process is the program (``argv`` None:
    the ``compilescope`` command), it ends at once: the command's own resources are released
    by now (temporary directories, locks, workers started ahead), and the interpreter's
    finalisation after Dynamo or inductor ran in this process (their pools and caches) can
    take seconds to a quarter of a minute — a signal ends the program within a second."""
    if program:  # the workers started ahead are ended by their executor's shutdown and the command's close
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code


# a write that could not be made (a full disk, /dev/full, a quota, a read-only or failing device): one line
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})


def _quiet_stdout() -> None:
    """After a write that could not be made: standard output keeps what it can take (a report
    already rendered to a healthy stdout is not lost for a full disk elsewhere); if it is the
    output that cannot, what is still buffered for it goes to the null device, so the
    interpreter's last flush raises nothing either."""
    try:
        sys.stdout.flush()
        return
    except (OSError, ValueError, AttributeError):
        pass
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, sys.stdout.fileno())
        finally:
            os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    from ..execute.local import Interrupted

    INVOKED[:] = list(sys.argv[1:] if argv is None else argv)
    program = argv is None
    _install_signal_handlers()
    if program:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is not None and not isinstance(stream, _ReaderMayLeave) and hasattr(stream, "fileno"):
                setattr(sys, name, _ReaderMayLeave(stream))
    try:
        rv = cli.main(args=argv, prog_name="compilescope", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        return 0
    except click.ClickException as exc:
        click.echo(f"compilescope: error: {exc.format_message()}", err=True)
        return EXIT_USAGE
    except CompilescopeError as exc:
        click.echo(f"compilescope: error: {exc}", err=True)
        return EXIT_USAGE
    except _loaded("app.run", "RunInterrupted") as caught:  # evaluated only when an exception gets here
        interrupted: Any = caught
        done = sum(1 for t in interrupted.result.trials if t.status != "interrupted")
        total = done + len(interrupted.result.missing)
        where = f"; saved in {interrupted.path}" if interrupted.path else ""
        click.echo(f"compilescope: interrupted: {done} of {total} trial(s) finished{where}", err=True)
        if interrupted.path:
            click.echo("compilescope: resume with: compilescope run --resume "
                       f"{shlex.quote(str(interrupted.path))}", err=True)
        return _ended(128 + interrupted.signum, program)
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        _quiet_stdout()
        where = f": {exc.filename}" if exc.filename else ""
        click.echo(f"compilescope: error: {os.strerror(exc.errno)}{where}", err=True)
        return EXIT_FAILED
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("compilescope: interrupted", err=True)
        return _ended(130, program)
    except Interrupted as exc:
        click.echo("compilescope: interrupted", err=True)
        return _ended(128 + exc.signum, program)
    return rv if isinstance(rv, int) else 0


__all__ = ["EXIT_FAILED", "EXIT_USAGE", "FORMAT_HELP", "PIPE_WIDTH", "cli", "main", "output_width"]
