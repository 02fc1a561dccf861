"""Timing that is honest on every device.

A :class:`WallClock` brackets the call with a device synchronisation, so asynchronous CUDA
work is inside the interval (compile time is host time and is included too). An
:class:`EventClock` times steady-state calls with CUDA events recorded on the stream. Both
take their time source, synchronisation and event factory as arguments, so the CUDA path
is tested on CPU by injection.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Clock(Protocol):
    def time_call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]: ...


@dataclass(frozen=True)
class WallClock:
    now: Callable[[], float] = time.perf_counter
    sync: Callable[[], None] | None = None

    def time_call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
        if self.sync is not None:
            self.sync()  # drain earlier work so it is not billed to this call
        start = self.now()
        out = fn(*args, **kwargs)
        if self.sync is not None:
            self.sync()
        return out, self.now() - start


class _Event(Protocol):
    def record(self) -> None: ...
    def synchronize(self) -> None: ...
    def elapsed_time(self, end: Any) -> float: ...


@dataclass(frozen=True)
class EventClock:
    """CUDA-event timing: ``elapsed_time`` is in milliseconds, returned here in seconds."""

    make_event: Callable[[], _Event]
    sync: Callable[[], None] | None = None

    def time_call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
        if self.sync is not None:
            self.sync()
        start, end = self.make_event(), self.make_event()
        start.record()
        out = fn(*args, **kwargs)
        end.record()
        end.synchronize()
        return out, start.elapsed_time(end) / 1000.0


def clocks_for_device(device: str) -> tuple[Clock, Clock]:
    """(clock for stream calls, clock for steady-state samples) on ``device``."""
    if device.startswith("cuda"):
        import torch

        sync = torch.cuda.synchronize
        return WallClock(sync=sync), EventClock(lambda: torch.cuda.Event(enable_timing=True), sync=sync)
    return WallClock(), WallClock()
