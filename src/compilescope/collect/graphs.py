"""Which compiled graph each call actually ran.

``run`` owns the backend: it hands ``torch.compile`` a thin wrapper around the backend the
user asked for (same compiler, same mode), which tags each graph it returns with the id of
the compile that made it and notes that id every time the graph runs. A call that ran
through compiled frames leaves ids behind; a call that left none, in a trial that has
compiled graphs, ran eagerly — past the recompile limit, after a failed compile, or in a
frame Dynamo skips. This is exact, for modules and functions alike, and needs no guard
re-evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import compat


class GraphRunLog:
    def __init__(self) -> None:
        self.compiled: list[str] = []  # compile ids whose graph reached the backend
        self._ran: list[str] = []

    def backend(self, name: str, mode: str | None = None, dynamic: bool | None = None) -> Callable[..., Any]:
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

    def ran_eagerly(self, ran: tuple[str, ...]) -> bool | None:
        """True when graphs exist and none ran; None when no graph was ever compiled
        (nothing to tell apart: a frame whose graph is empty never reaches the backend)."""
        if not self.compiled:
            return None
        return not ran
