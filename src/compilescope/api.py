"""The Python entry point: :func:`run` a workload over a stream under strategies, :func:`advise`
on it, :func:`resume_run` an interrupted run.

Everything a run needs is checked before the first trial (workload, stream, strategies,
marks, backend, device, dynamic sources, output path). Each finished trial is appended to
the results journal at once; the results file is written before anything is rendered.
The functions live in the application layer (:mod:`compilescope.app`), beside the use cases
the CLI calls; this module is their public face.
"""

from __future__ import annotations

from .app.advise import advise
from .app.run import (  # noqa: F401  (DEFAULT_TIMEOUT_S, default_results_path, write_results: importable here as before)
    DEFAULT_TIMEOUT_S,
    RunInterrupted,
    _header,
    default_results_path,
    execute_run,
    resume_run,
    run,
    variant,
    write_results,
)
from .prepare import prepare_run

__all__ = ["RunInterrupted", "advise", "execute_run", "prepare_run", "resume_run", "run", "variant"]
