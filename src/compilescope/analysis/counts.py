"""The counts every report, ``watch`` and ``advise --script`` state, each defined once: frame
compiles (a refusal at the recompile limit and a lazy backward compile are not compiles),
recompiles, failed and refused attempts, compile seconds, and distinct graph breaks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from ..model import CompileRecord, GraphBreak
from ..report import CompileCounts

BreakKey = tuple[str, str | None, int | None]


def count_compiles(records: Sequence[CompileRecord]) -> CompileCounts:
    compiles = [r for r in records if r.is_compile]
    return CompileCounts(
        compiles=len(compiles),
        recompiles=sum(r.is_recompile for r in compiles),
        failed=sum(r.failed for r in compiles),
        refused=sum(r.refused for r in records),
        compile_s=sum((r.compile_time_s or 0.0) + (r.backward_compile_s or 0.0) for r in compiles),
        backward_s=sum(r.backward_compile_s or 0.0 for r in compiles),
    )


def graphs_needed(records: Iterable[CompileRecord]) -> int:
    """The most cache entries one frame asked for (its compiles and the attempts the recompile
    limit refused): what the limit must hold for no request to run that frame eagerly."""
    per_frame = Counter(f"{r.epoch}:{r.compile_id.frame}" for r in records if r.made_entry or r.refused)
    return max(per_frame.values(), default=0)


def break_key(b: GraphBreak) -> BreakKey:
    """What makes a graph break distinct: PyTorch's first line of it, the file and the line."""
    return (b.reason.strip().split("\n", 1)[0], b.filename, b.line)


def distinct_breaks(breaks: Iterable[GraphBreak]) -> dict[BreakKey, list[GraphBreak]]:
    """Each distinct graph break (:func:`break_key`) with its occurrences, in order of first appearance."""
    out: dict[BreakKey, list[GraphBreak]] = {}
    for b in breaks:
        out.setdefault(break_key(b), []).append(b)
    return out
