"""The probe use cases: ``compilescope probe SCRIPT ARGS…`` (:func:`probe_script`: the script
run as ``python`` would, every compile, recompile and graph break captured) and ``probe
--trace DIR`` (:func:`probe_trace`: an existing ``TORCH_TRACE`` directory read)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.build import probe_stream
from ..analysis.outputs import probe_file
from ..errors import CompilescopeError, OptionError
from ..report import ProbeFile


@dataclass(frozen=True)
class Probed:
    """A probe's records and report; ``returncode``: the script's (None for a trace), and
    ``journal``: the file the program streamed its records to, kept until the probe JSON holds
    them (None when it was removed)."""

    file: ProbeFile
    returncode: int | None = None
    journal: Path | None = None


def probe_trace(trace_dir: Path, *, strict: bool = False) -> Probed:
    from ..probe.trace import read_trace

    return Probed(probe_file(read_trace(trace_dir, strict=strict)))


def probe_script(script: str, args: Sequence[str], *, settings: Sequence[str] = (), json_path: Path | None = None,
                 ignored_signals: Iterable[int] = (), record_shapes: Path | None = None) -> Probed:
    """Run ``script`` with ``args`` under probe, ``settings`` (``NAME=VALUE``) applied; the program streams its
    records to a journal beside ``json_path`` (kept, for the caller to remove once the probe
    JSON is written), else to a temporary file (removed). ``ignored_signals`` stay ignored
    for the program, as they were for compilescope."""
    from ..options import apply_probe_settings, parse_settings
    from ..probe.launch import in_a_fork, probe_result, run_probed

    if not Path(script).is_file():
        what = "is a directory, not a script" if Path(script).is_dir() else \
            "is not a regular file" if Path(script).exists() else "does not exist"
        raise CompilescopeError(f"script {script!r} {what}")
    config = parse_settings(list(settings))
    # applied once (and undone) where torch may be imported: this process imports it only in the
    # program, after the script's own import; a name or value this torch refuses is one line now
    refused = in_a_fork(lambda: apply_probe_settings(config)) if config else None
    if refused:
        raise OptionError(refused)
    journal = journal_for(json_path)
    read = False
    try:
        returncode = run_probed(script, list(args), config, journal, set(ignored_signals), record_shapes)
        result = probe_result(journal, " ".join([script, *args]), returncode)
        result = dataclasses.replace(result, settings=tuple(f"{k}={json.dumps(v)}" for k, v in config.items()))
        read = True
    finally:
        if json_path is None or not read:
            journal.unlink(missing_ok=True)
    return Probed(probe_file(result), returncode, journal if json_path is not None else None)


def checked_fixes(script: str, args: Sequence[str], file: ProbeFile, on_progress: Any = None) -> ProbeFile:
    """``probe --check-fixes``: the probe's report with each setting fix of its causes run (the
    script again, unmodified, under it) and judged as ``advise --script`` judges its proposals."""
    from ..analysis.build import build_probe_report
    from ..script_advise import check_fixes

    checks = check_fixes(script, list(args), file.result, on_progress=on_progress)
    return ProbeFile(file.result, build_probe_report(file.result, checks))


def journal_for(json_path: Path | None) -> Path:
    """Where the probed program streams its records: beside the probe JSON (as ``run``'s
    journal), else a temporary file."""
    import os
    import tempfile

    try:
        if json_path is None:
            fd, name = tempfile.mkstemp(prefix="compilescope-probe-", suffix=".journal")
            os.close(fd)
            return Path(name)
        from ..paths import journal_path

        journal = journal_path(json_path)
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.write_bytes(b"")
        return journal
    except OSError as exc:
        raise OptionError(f"cannot write the probe journal: {exc.strerror}") from None


def shape_stream(file: ProbeFile) -> str | None:
    """The input shapes the probe saw, as a stream file (``run --stream @FILE``); None when a
    call of the function passed no tensor it records (one inside an object argument, say): a
    row with no size is no request a workload can make."""
    rows = probe_stream(file.result)
    if any(not row for row in rows):
        return None
    return "".join(json.dumps(row) + "\n" for row in rows)
