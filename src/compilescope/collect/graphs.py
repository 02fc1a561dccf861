"""Which compiled graph each call actually ran.

``run`` owns the backend: it hands ``torch.compile`` a thin wrapper around the backend the
user asked for (same compiler, same mode), which tags each graph it returns with the id of
the compile that made it and notes that id every time the graph runs. A call that ran
through compiled frames leaves ids behind; a call that left none, in a trial that has
compiled graphs, ran eagerly — past the recompile limit, after a failed compile, or in a
frame Dynamo skips. This is exact, for modules and functions alike, and needs no guard
re-evaluation.

A call can also run *partly* eagerly: a graph break splits the code into frames (the first
and a resume frame after the break), each with its own cache entries and recompile limit.
Past the limit Dynamo refuses the resume frame and runs it eagerly from then on while the
first frame still runs its compiled graph. :func:`eager_frames` tells such calls apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..model import CallRecord, CompileId, CompileRecord


class GraphRunLog:
    def __init__(self) -> None:
        self.compiled: list[str] = []  # compile ids whose graph reached the backend
        self.failed = False  # some frame's compile failed (that frame runs eagerly from then on)
        self.entries = False  # some compile made a cache entry (its graph may be empty: it never reaches the backend)
        self.skipped = False  # Dynamo traced a frame and skipped it (no op in its graph): no entry, the code runs eagerly
        self.blocked: set[int] = set()  # frames refused at the recompile limit or failed: run eagerly on a miss
        self._ran: list[str] = []

    def backend(self, name: str, mode: str | None = None, dynamic: bool | None = None) -> Callable[..., Any]:
        from .. import compat  # torch, imported only where a trial runs

        inner = compat.backend_callable(name, mode, dynamic)
        ran = self._ran
        compiled = self.compiled

        def counting_backend(gm: Any, example_inputs: Any, **kwargs: Any) -> Any:
            cid = compat.current_compile_id() or "?"
            fn = inner(gm, example_inputs, **kwargs)
            compiled.append(cid)

            def run(*args: Any) -> Any:
                ran.append(cid)
                return fn(*args)

            run._boxed_call = getattr(fn, "_boxed_call", False)  # type: ignore[attr-defined]
            return run

        counting_backend.__name__ = f"compilescope_{name}"
        return counting_backend

    def start(self) -> None:
        """Begin one call (or one batch of calls): forget what ran before."""
        del self._ran[:]

    def taken(self) -> tuple[str, ...]:
        """The compile ids of the graphs run since :meth:`start`, in order."""
        return tuple(self._ran)

    def note(self, records: Iterable[CompileRecord]) -> None:
        """Take in the compile records a call (or a phase) caused: which compiles failed, and
        whether any made a cache entry."""
        for r in records:
            self.failed = self.failed or r.failed
            skipped = r.made_entry and r.guard_count is None  # traced, then skipped: Dynamo built no guards
            self.skipped = self.skipped or skipped
            self.entries = self.entries or (r.made_entry and not skipped)
            if r.failed or r.refused:
                self.blocked.add(r.compile_id.frame)

    def ran_eagerly(self, ran: tuple[str, ...]) -> bool | None:
        """True when a call ran none of the compiled graphs: graphs exist and none ran, or none
        was ever compiled, a compile failed or Dynamo skipped the frame it traced (a graph with
        no op: PyTorch then runs that code eagerly for good, checking no guard), and no compile
        made a cache entry — no compiled code exists to run; None when no graph was compiled otherwise (nothing to tell apart: a
        frame whose graph is empty never reaches the backend, and its entry runs nothing the
        backend saw)."""
        if not self.compiled:
            return True if (self.failed or self.skipped) and not self.entries and not ran else None
        return not ran

    @property
    def told(self) -> bool:
        """Whether :meth:`ran_eagerly` can tell (a graph was compiled, or no compile made an
        entry where one failed or was skipped)."""
        return bool(self.compiled) or ((self.failed or self.skipped) and not self.entries)


def frames_of(graph_ids: Iterable[str]) -> set[int]:
    """The frames (by frame id) whose graphs these compile ids are."""
    return {cid.frame for g in graph_ids if (cid := CompileId.parse(g)) is not None}


def eager_frames(calls: Sequence[CallRecord], records: Sequence[CompileRecord]) -> dict[int, tuple[int, ...]]:
    """For each stream call that ran some compiled graphs but not every frame's: the frames
    (by frame id) it ran eagerly, keyed by call index.

    A frame counts when Dynamo refused it at the recompile limit, or a compile of it failed,
    at this call or before (from then on a cache miss runs it eagerly), and this call ran none
    of its graphs — when its graph has run on some call (it is real code with a graph, entered
    by the stream: a frame whose graphs are empty runs nothing compiled either way), or, for a
    failed frame that never had one, at the call it failed at (entered then) and, when it is a
    graph break's resume frame or the compiled target's own entry frame, at every call after
    (the code before the break enters it on a straight path; every call enters the target's
    frame — a model whose outer frame failed runs it eagerly around an inner frame Dynamo
    compiled instead; another function's frame may have been entered once, a lazy set-up say).
    Calls that raised, ran nothing compiled (a whole eager fallback, see
    :attr:`CallRecord.ran_eagerly`) or did not record their graphs are left out. A blocked
    frame that this call's path never entered would be counted too; a graph break on a
    straight path always enters its resume frame."""
    with_graphs = frames_of(g for c in calls for g in (c.graphs_run or ()))
    blocked: dict[int, int] = {}  # frame → the first stream call at which it was refused or failed
    failed: dict[int, set[int]] = {}  # a failed frame → the calls it failed at
    resumes: set[int] = set()
    for r in records:
        if r.phase == "stream" and (r.refused or r.failed) and r.call_index is not None:
            frame = r.compile_id.frame
            blocked[frame] = min(blocked.get(frame, r.call_index), r.call_index)
            if r.failed:
                failed.setdefault(frame, set()).add(r.call_index)
                if r.resumes or r.target is not None:  # entered by every call after
                    resumes.add(frame)
    out: dict[int, tuple[int, ...]] = {}
    if not blocked:
        return out
    for c in calls:
        if c.error is not None or not c.graphs_run or c.ran_eagerly:
            continue
        ran = frames_of(c.graphs_run)
        entered = {f for f, at in failed.items() if c.index in at or f in resumes}
        eager = tuple(sorted(f for f, since in blocked.items()
                             if since <= c.index and (f in with_graphs or f in entered) and f not in ran))
        if eager:
            out[c.index] = eager
    return out
