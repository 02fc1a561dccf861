"""``compilescope probe SCRIPT``: the program in a process of its own, observed, never changed.

``probe`` forks before anything of it has imported torch; the child restores the signal
dispositions and mask ``probe`` was started with — those a plain ``python SCRIPT`` has — and
runs SCRIPT as ``__main__`` with argv SCRIPT and every argument after it
(:func:`compilescope.probe.child.run_child`), which installs the capture once the script's
own ``import torch`` has run (torch reads the environment the script may have set before it
as it is imported), then ends as Python ends:
non-daemon threads joined, ``atexit`` functions run, the exit status of ``sys.exit``, an
uncaught exception's traceback through ``sys.excepthook`` (status 1), an uncaught
``KeyboardInterrupt`` by SIGINT. The child streams every record into a journal as it is
captured (:mod:`compilescope.probe.journal`), so ``os._exit``, a fatal signal or a crash in C
still leaves every record made before it. The parent only waits:

* signals sent to ``probe``'s pid by another process (``kill PID``) are passed on to the
  program; signals the kernel sends to the whole process group (Ctrl-C, Ctrl-\\, a terminal
  hangup) already reach the program directly and are not sent twice;
* when the program has ended, the report and the JSON are written from the journal, and
  ``probe`` ends as the program did: with its exit status, or killed by the same signal
  (the default disposition restored, then the signal raised again), so a shell sees 143
  for SIGTERM and 130 for an uncaught Ctrl-C. When ``probe`` is killed, the program is too.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..model import ProbeResult
from .journal import read_journal

# Signals another process may send to `probe` meaning the program: passed on.
FORWARDED = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)
# What compilescope itself installs handlers for (cli.main): given back to the program.
OURS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _passes_on(info: signal.struct_siginfo, child: int) -> bool:
    """A signal from another process (``si_code`` ≤ 0: kill, sigqueue, tkill), not from the
    kernel (``SI_KERNEL`` > 0: the terminal sends Ctrl-C to the whole foreground group, the
    program included) and not from the program itself."""
    return info.si_code <= 0 and info.si_pid != child


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def run_probed(script: str, args: list[str], settings: dict[str, Any], journal: Path,
               ignored: Iterable[int] = (), record_shapes: Path | None = None) -> int:
    """Run the program and wait for it; returns how it ended as ``subprocess`` puts it:
    the exit status, or ``-N`` when killed by signal N. ``ignored``: signals ignored when
    compilescope started (``nohup``, a background job), ignored in the program too.
    ``record_shapes``: where the program's compiled calls are recorded
    (:mod:`compilescope.shapes_record`, the program's main thread)."""
    block = set(FORWARDED) | {signal.SIGCHLD}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, block)  # from here on, signals wait for us
    try:
        _flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            _child(script, args, settings, journal, mask, set(ignored), parent, record_shapes)  # never returns
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            info = signal.sigtimedwait(block, 1.0)
            if info is not None and info.si_signo != signal.SIGCHLD and _passes_on(info, pid):
                try:
                    os.kill(pid, info.si_signo)
                except ProcessLookupError:
                    pass
        while signal.sigtimedwait(block, 0) is not None:
            pass  # what arrived as the program ended (the terminal's Ctrl-C too) was the program's
        return os.waitstatus_to_exitcode(status)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _child(script: str, args: list[str], settings: dict[str, Any], journal: Path, mask: set[int],
           ignored: set[int], parent: int, record_shapes: Path | None = None) -> None:
    code = 1
    try:
        _die_with(parent)
        for sig in OURS:
            default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            signal.signal(sig, signal.SIG_IGN if sig in ignored else default)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for name in ("stdout", "stderr"):  # the program's own streams, not the CLI's pipe guard
            inner = getattr(getattr(sys, name), "reader_may_leave_of", None)
            if inner is not None:
                setattr(sys, name, inner)
        code = _run_as_python(script, args, settings, journal, record_shapes)
    except BaseException:  # compilescope's own fault, outside the script
        traceback.print_exc()
    finally:
        _flush()
        os._exit(code)


def _die_with(parent: int) -> None:
    """The program is killed when ``probe`` is (as it would be were it the process killed)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # probe died before the line above
        os.kill(os.getpid(), signal.SIGKILL)


def _run_as_python(script: str, args: list[str], settings: dict[str, Any], journal: Path,
                   record_shapes: Path | None = None) -> int:
    """Run the script, then end as the interpreter ends after ``python SCRIPT``."""
    from .child import run_child

    interrupted = False
    recording: list[Any] = []

    def on_torch() -> None:  # once the script has imported torch
        from .. import compat
        from ..shapes_record import HUB, ShapeRecorder

        if threading.current_thread() is threading.main_thread():
            compat.patch_settings(settings)  # for the whole program: never undone
        elif settings:
            _in_the_main_thread(lambda: compat.patch_settings(settings))
        if record_shapes is not None:
            # the program's main thread, whichever thread imported torch
            recorder = ShapeRecorder(record_shapes, thread=threading.main_thread().ident).start()
            recording.append(recorder)
            HUB.add(recorder)

    try:
        run_child(script, args, str(journal), on_torch)
        code = 0
    except SystemExit as exc:
        code = _exit_status(exc.code)
    except BaseException as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)  # run_child starts it at the script's frame
        code, interrupted = 1, isinstance(exc, KeyboardInterrupt)
    threading._shutdown()  # type: ignore[attr-defined]  # non-daemon threads joined, as at exit
    atexit._run_exitfuncs()
    for recorder in recording:  # never raises: a recording that stopped says why, on stderr with the report
        from ..shapes_record import HUB

        HUB.remove(recorder)
        for f in recorder.close().files:
            if f.stopped:
                print(f"compilescope: the shape recording of {f.function} stopped: {f.stopped}", file=sys.stderr)
    _flush()
    if interrupted:  # as Python does after an uncaught KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _in_the_main_thread(apply: Callable[[], None]) -> None:
    """Run ``apply`` in the program's main thread before its first compiled call: torch was
    imported in another thread, and a setting made there holds only there (from 2.13 a
    setting is per thread: a context variable)."""
    from .. import compat

    done: list[bool] = []

    def before_call(_frame: Any) -> None:
        if not done and threading.current_thread() is threading.main_thread():
            done.append(True)
            undo()
            apply()

    undo = compat.observe_compiled_calls(before_call)


def in_a_fork(check: Callable[[], None]) -> str | None:
    """Run ``check`` in a forked process and return the line of the :class:`CompilescopeError`
    it raised, else None: what needs torch to check is checked without importing torch here."""
    from ..errors import CompilescopeError

    _flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        said = b""
        try:
            check()
        except CompilescopeError as exc:
            said = str(exc).encode()
        except BaseException as exc:  # noqa: BLE001 - said as one line in the probe's own process
            said = f"could not check the settings: {type(exc).__name__}: {exc}".encode()
        try:
            os.write(write, said)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if not said and code != 0:  # it died before saying: nothing was checked
        how = f"killed by {signal.Signals(-code).name}" if code < 0 and -code in signal.valid_signals() else \
            f"ended with status {code}"
        return f"could not check the settings: the process checking them was {how}"
    return said.decode(errors="replace") or None


def _exit_status(code: object) -> int:
    """``sys.exit(code)`` as the interpreter turns it into a status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def probe_result(journal: Path, source: str, returncode: int) -> ProbeResult:
    """The records the program left in the journal; the exit code as a shell reports it."""
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        return read_journal(journal, source=source, exit_code=128 - returncode, error=f"killed by {name}")
    return read_journal(journal, source=source, exit_code=returncode, error=None)


def end_as(returncode: int) -> int:
    """End this process as the program ended: killed by the same signal (its default
    disposition restored first), or return its exit status."""
    if returncode >= 0:
        return returncode
    sig = -returncode
    _flush()
    try:
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
    except (OSError, ValueError):
        pass
    return 128 + sig  # a signal whose default is not to end the process
