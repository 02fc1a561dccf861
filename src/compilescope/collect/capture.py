"""Per-call attribution of compiles, guard failures and graph breaks.

The hot path only notes list lengths; :meth:`CompileCapture.take` diffs PyTorch's
process-wide records around one call and turns what is new into frozen records:

* compilation metrics (one entry per frame compile, with timings and phases),
* ``guard_failures`` (every rejecting cache entry's reason, per code object — the full set
  ``recompiles_verbose`` prints, where the metrics keep only the first),
* graph-break reasons with the user's file and line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import compat
from ..analysis.guards import enrich_actual, parse_guard_failure
from ..model import CompileEvent, GraphBreak, GuardFailure


@dataclass(frozen=True)
class Captured:
    compiles: tuple[CompileEvent, ...]
    graph_breaks: tuple[GraphBreak, ...]
    unattributed: tuple[GuardFailure, ...]
    limit_hit_codes: tuple[Any, ...] = ()  # code objects that hit the recompile limit on this call


def code_key(code: Any) -> tuple[str, str, int]:
    """(name, file, first line) of a code object — how compilation metrics name a frame."""
    if code is None:
        return ("", "", 0)
    return (
        str(getattr(code, "co_name", code)),
        str(getattr(code, "co_filename", "")),
        int(getattr(code, "co_firstlineno", 0) or 0),
    )


def break_location(record: Any) -> tuple[str | None, int | None]:
    stack = getattr(record, "user_stack", None) or []
    if not stack:
        return None, None
    frame = stack[-1]
    return getattr(frame, "filename", None), getattr(frame, "lineno", None)


class CompileCapture:
    """Diffs PyTorch's compile records around each call. Create after any ``reset()``."""

    def __init__(self) -> None:
        compat.enable_compilation_metrics()
        self._metrics_seen = len(compat.compilation_metrics())
        self._failures_seen = {code: len(v) for code, v in compat.guard_failures().items()}
        self._breaks_seen = len(compat.graph_break_reasons())

    def _new_failures(self) -> dict[tuple[str, str, int], tuple[Any, list[str]]]:
        out: dict[tuple[str, str, int], tuple[Any, list[str]]] = {}
        for code, reasons in list(compat.guard_failures().items()):
            seen = self._failures_seen.get(code, 0)
            if len(reasons) > seen:
                out.setdefault(code_key(code), (code, []))[1].extend(reasons[seen:])
            self._failures_seen[code] = len(reasons)
        return out

    def take(self, call_index: int | None, arguments: Mapping[str, Any], phase: str = "stream") -> Captured:
        metrics = compat.compilation_metrics()
        new_metrics = metrics[self._metrics_seen :]
        self._metrics_seen = len(metrics)

        new_failures = self._new_failures()
        codes = {key: code for key, (code, _) in new_failures.items()}
        failures = {
            key: [enrich_actual(parse_guard_failure(text), arguments) for text in texts]
            for key, (_, texts) in new_failures.items()
        }

        events = []
        limit_hit = []
        for raw in new_metrics:
            m = compat.view_metrics(raw)
            key = (m.co_name, m.co_filename, m.co_firstlineno)
            if not m.co_name and m.fail_type and len(failures) == 1:
                # A compile that failed early (e.g. the recompile limit) carries no code
                # location in its metrics; the guard failures of this call name the frame.
                key = next(iter(failures))
            if compat.is_recompile_limit_failure(m.fail_type, m.fail_reason) and key in codes:
                limit_hit.append(codes[key])
            reasons = tuple(failures.pop(key, ())) if m.is_forward else ()
            events.append(
                CompileEvent(
                    compile_id=m.compile_id,
                    function=key[0],
                    filename=key[1],
                    line=key[2],
                    compile_time_s=m.duration_s,
                    phases_s=m.phases_s,
                    cache=m.cache,
                    reasons=reasons,
                    fail_type=m.fail_type,
                    fail_reason=m.fail_reason,
                    call_index=call_index,
                    forward=m.is_forward,
                    phase=phase,
                )
            )

        breaks_all = compat.graph_break_reasons()
        new_breaks = breaks_all[self._breaks_seen :]
        self._breaks_seen = len(breaks_all)
        graph_breaks = []
        for record in new_breaks:
            filename, line = break_location(record)
            graph_breaks.append(
                GraphBreak(
                    reason=str(getattr(record, "reason", record)),
                    filename=filename,
                    line=line,
                    call_index=call_index,
                )
            )
        leftover = tuple(f for fs in failures.values() for f in fs)
        return Captured(tuple(events), tuple(graph_breaks), leftover, tuple(limit_hit))
