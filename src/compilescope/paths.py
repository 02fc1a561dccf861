"""The files compilescope writes and reads, checked before any work starts.

Outputs: a path is written only when it is a regular file or does not exist yet. A device
node, a FIFO, a socket, a directory, a symbolic link leading out of its directory (or into
``/proc/self/fd/…``) and anything under ``/proc`` or ``/sys`` are refused up front with one
line. Whether a directory can be written is tested by creating (and removing) a file in it:
``os.access`` says yes to root about a read-only filesystem, a kernel filesystem, anything.
Two outputs of one command on the same file are refused; a results file is locked for the
run, so a second run on the same path refuses at once and names the first.

Inputs (results files, stream files, sweep files): read only from regular files and at most
``COMPILESCOPE_MAX_READ_MB`` (default 200) — ``/dev/zero`` or a FIFO is refused unread.

Run directories (``compilescope-KIND-PID-HOST-…`` under the temporary directory): named by the
process that owns them, so that a later run removes a dead owner's and leaves a live one's.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import stat
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .errors import CompilescopeError, OptionError

MAX_READ_ENV = "COMPILESCOPE_MAX_READ_MB"
DEFAULT_MAX_READ_MB = 200.0
KERNEL_FILESYSTEMS = ("/proc", "/sys")
LOCK_SUFFIX = ".lock"


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def _kernel_fs(path: str) -> str | None:
    for root in KERNEL_FILESYSTEMS:
        if path == root or path.startswith(root + "/"):
            return root
    return None


def _text(path: str | os.PathLike[str], what: str) -> str:
    text = os.fspath(path)
    if not text:
        raise OptionError(f"{what}: empty path")
    if "\0" in text:
        raise OptionError(f"cannot write {what} {text!r}: the path holds a NUL byte")
    return text


def check_recording(path: str | os.PathLike[str]) -> Path:
    """A shape recording's file (``record_shapes``, ``probe --record-shapes``) as
    :func:`check_output` takes it, in a directory that exists."""
    checked = check_output(path, "the shape recording")  # refuses a device, a directory, a foreign link
    if not checked.parent.is_dir():
        raise OptionError(f"record_shapes path {str(path)!r}: no directory {str(Path(path).parent)!r}")
    return checked


def check_output(path: str | os.PathLike[str], what: str) -> Path:
    """Refuse now, before any trial, an output path that is not ours to write (see the module
    docstring); creates nothing: a new directory is tested at its nearest existing ancestor.
    Returns the file that will be written: ``path`` itself, or the regular file a symbolic
    link inside the same directory points to."""
    text = _text(path, what)

    def refuse(reason: str) -> OptionError:
        return OptionError(f"cannot write {what} {text!r}: {reason}")

    absolute = os.path.abspath(text)
    directory = os.path.realpath(os.path.dirname(absolute))
    for candidate in (absolute, os.path.join(directory, os.path.basename(absolute))):
        root = _kernel_fs(candidate)
        if root is not None:
            raise refuse(f"{root} is a kernel filesystem, not a place for files")
    target = absolute
    try:
        st: os.stat_result | None = os.lstat(absolute)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(absolute)
        if _kernel_fs(target) is not None or os.path.dirname(target) != directory:
            try:
                shown = os.readlink(absolute)
            except OSError:
                shown = target
            raise refuse(f"it is a symbolic link to {shown}, outside its directory")
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None  # a link to a new file beside it
        except OSError as exc:
            raise refuse(exc.strerror or str(exc)) from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise refuse("it is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise refuse(f"it is {_kind(st.st_mode)}, not a regular file")
        try:  # opening for append changes nothing; it fails when the file is read-only to us
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC))
        except OSError as exc:
            raise refuse(exc.strerror or str(exc)) from None
    existing = directory  # nothing is created while checking: the writers make the directory
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise refuse(f"{existing} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".compilescope-", suffix=".probe", dir=existing)
    except OSError as exc:
        raise refuse(exc.strerror or str(exc)) from None
    os.close(fd)
    os.unlink(probe)
    return Path(target)


def _identity(path: str) -> tuple[Any, ...]:
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
        return ("inode", st.st_dev, st.st_ino)
    except OSError:
        return ("path", real)


def check_distinct(outputs: Iterable[tuple[str | os.PathLike[str] | None, str]],
                   inputs: Iterable[tuple[str | os.PathLike[str] | None, str]] = ()) -> None:
    """Refuse two outputs on one file (``--csv`` the same as ``--json`` would overwrite the
    results), or an output on a file the command reads. Each item: (path or None, option)."""
    seen: dict[tuple[Any, ...], str] = {}
    for path, what in inputs:
        if path is not None:
            seen.setdefault(_identity(os.fspath(path)), what)
    for path, what in outputs:
        if path is None:
            continue
        key = _identity(os.fspath(path))
        if key in seen:
            raise OptionError(f"{what} and {seen[key]} name the same file {os.fspath(path)!r}; "
                              "give each its own path")
        seen[key] = what


def max_read_bytes() -> int:
    """The most bytes read from one input file: ``COMPILESCOPE_MAX_READ_MB`` (default 200)."""
    raw = os.environ.get(MAX_READ_ENV, "").strip()
    if not raw:
        return int(DEFAULT_MAX_READ_MB * 1e6)
    try:
        mb = float(raw)
    except ValueError:
        mb = float("nan")
    if not (0 < mb < 1e9):
        raise OptionError(f"{MAX_READ_ENV}={raw!r}: expected a positive number of megabytes")
    return int(mb * 1e6)


def read_capped(path: str | os.PathLike[str], name: str, error: type[CompilescopeError] = CompilescopeError,
                limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (default :func:`max_read_bytes`);
    anything else raises ``error`` with one line naming the file as ``name``. A FIFO is opened
    without waiting for a writer, so refusing it never blocks."""
    cap = max_read_bytes() if limit is None else limit
    try:
        text = os.fspath(path)
        fd = os.open(text, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise error(f"cannot read {name}: {exc.strerror}") from None
    except ValueError as exc:  # a NUL byte in the path
        raise error(f"cannot read {os.fspath(path)!r}: {exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise error(f"cannot read {name}: it is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise error(f"cannot read {name}: it is {_kind(st.st_mode)}, not a regular file")
        too_big = error(f"cannot read {name}: it is larger than {cap / 1e6:g} MB (set {MAX_READ_ENV} to read more)")
        if st.st_size > cap:
            raise too_big
        os.set_blocking(fd, True)
        chunks = []
        left = cap + 1  # a file that grows (or a /proc file that reports size 0) is still bounded
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise too_big
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"cannot read {name}: {exc.strerror}") from None
    finally:
        os.close(fd)


def check_input(path: str | os.PathLike[str], name: str, error: type[CompilescopeError] = CompilescopeError) -> Path:
    """A file to be opened by another library (SQLite): it must exist and be a regular file."""
    text = os.fspath(path)
    try:
        st = os.stat(text)
    except FileNotFoundError:
        raise error(f"{name} does not exist") from None
    except (OSError, ValueError) as exc:
        raise error(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise error(f"cannot read {name}: it is {_kind(st.st_mode)}, not a regular file")
    return Path(text)


def safe_name(name: str, fallback: str = "run") -> str:
    """A file-name component from user text: letters, digits, ``_-`` only (never ``/`` or
    ``..``), with a short hash of the original when anything was replaced."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:60]
    if safe == name:
        return safe
    return f"{safe or fallback}-{hashlib.sha1(name.encode('utf-8', 'replace')).hexdigest()[:8]}"


def lock_path(results: Path) -> Path:
    return results.with_name(results.name + LOCK_SUFFIX)


JOURNAL_SUFFIX = ".journal"


def journal_path(results: Path) -> Path:
    """The journal beside a results file: each finished trial, appended as it finishes."""
    return results.with_name(results.name + JOURNAL_SUFFIX)


class ResultsLock:
    """An exclusive ``flock`` on ``RESULT.json.lock`` beside a results file, held for a run.
    The lock file holds the holder's pid and command, for the message a second run prints.
    The kernel drops the lock when the process ends however it ends; a lock file left by a
    killed run is taken over by the next."""

    def __init__(self, results: Path, command: str) -> None:
        self.results = results
        self.path = lock_path(results)
        self.command = command
        self.fd: int | None = None

    def acquire(self) -> ResultsLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OptionError(f"cannot lock results {str(self.results)!r}: {self.path.parent}: {exc.strerror}") from None
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
            except OSError as exc:
                raise OptionError(f"cannot lock results {str(self.results)!r}: {self.path}: {exc.strerror}") from None
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OptionError(f"cannot lock results {str(self.results)!r}: {self.path} is not a regular file")
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                        raise OptionError(f"cannot lock results {str(self.results)!r}: {exc.strerror}") from None
                    raise OptionError(f"results {str(self.results)!r} are being written by another run "
                                      f"({self._holder(fd)}); wait for it to finish or give another path") from None
                try:
                    same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if not same:  # removed by a holder that just finished: lock the new file
                    os.close(fd)
                    continue
            except BaseException:
                if fd is not None:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                raise
            os.set_blocking(fd, True)
            os.ftruncate(fd, 0)
            os.write(fd, (json.dumps({"pid": os.getpid(), "command": self.command}) + "\n").encode())
            self.fd = fd
            return self
        raise OptionError(f"cannot lock results {str(self.results)!r}: the lock file keeps changing")

    @staticmethod
    def _holder(fd: int) -> str:
        try:
            data = json.loads(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
            return f"pid {int(data['pid'])}: {str(data.get('command', ''))[:200]}"
        except (OSError, ValueError, TypeError, KeyError):
            return "pid unknown"

    def release(self) -> None:
        fd, self.fd = self.fd, None
        if fd is None:
            return
        try:
            if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                os.unlink(self.path)
        except OSError:
            pass
        finally:
            os.close(fd)  # closing drops the flock

    def __enter__(self) -> ResultsLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def results_siblings(results: Path) -> Sequence[tuple[Path, str]]:
    """The files a run writes beside its results file, for :func:`check_distinct`."""
    return ((journal_path(results), "the results journal"), (lock_path(results), "the results lock"))


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text, or bytes as they are) so that ``path`` is either the old file or
    the whole new one: a temporary file beside it, flushed to disk, then renamed over it. Only a
    regular file (or a new path) is ever replaced: a device, a FIFO, a socket or a directory
    raises ``OSError``; a symbolic link to a regular file in the same directory is written
    through (the link stays), any other link raises."""
    target = os.path.abspath(path)
    try:
        st: os.stat_result | None = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        real = os.path.realpath(target)
        if os.path.dirname(real) != os.path.realpath(os.path.dirname(target)):
            raise OSError(errno.EPERM, f"a symbolic link to {real}, outside its directory")
        target = real
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EPERM, "not a regular file: never replaced")
    directory, name = os.path.split(target)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        # text as UTF-8; a lone surrogate (a path's byte that is not UTF-8, as Python decodes it)
        # is written as its escape, ``\udcff``: data, never a crash after the trials ran
        text = {} if isinstance(data, bytes) else {"encoding": "utf-8", "errors": "backslashreplace"}
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w", **text) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# Run directories: temporary directories a process owns, named so that a later run can tell a
# dead owner's from a live one's.

def host_tag() -> str:
    """Six hex digits naming this host: a /tmp shared between machines or containers (other pid
    namespaces) never has another host's directories taken for a dead run's."""
    import platform

    return hashlib.sha1(platform.node().encode()).hexdigest()[:6]


def run_dir_prefix(kind: str, pid: int | None = None) -> str:
    """``compilescope-cache-PID-HOST-`` (a run's; ``sweep``, ``ray``: a sweep's, a Ray task's;
    ``import``: a process's scratch while it imports Dynamo, :func:`compilescope.compat.import_compiler`):
    the prefix of a temporary directory owned by process PID, removable once PID is dead."""
    return f"compilescope-{kind}-{os.getpid() if pid is None else pid}-{host_tag()}-"


RUN_DIR = re.compile(r"compilescope-(?P<kind>cache|sweep|ray|import)-(?P<pid>\d+)-(?P<host>[0-9a-f]{6})-.+")
