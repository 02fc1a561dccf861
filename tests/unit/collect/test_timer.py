"""The CUDA timing path, exercised on CPU by injecting the synchronisation and events."""

from __future__ import annotations

from compilescope.collect.timer import EventClock, WallClock, clocks_for_device


class FakeTime:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_wall_clock_syncs_before_and_after_the_call():
    log: list[str] = []
    now = FakeTime()

    def work(x):
        log.append("call")
        now.t += 0.25  # the "kernel" only finishes at the second sync
        return x * 2

    clock = WallClock(now=now, sync=lambda: log.append("sync"))
    out, seconds = clock.time_call(work, 21)
    assert out == 42 and seconds == 0.25
    assert log == ["sync", "call", "sync"]


def test_wall_clock_without_sync_on_cpu():
    now = FakeTime()
    clock = WallClock(now=now)

    def work():
        now.t += 1.5

    assert clock.time_call(work)[1] == 1.5


class FakeEvent:
    created: list["FakeEvent"] = []

    def __init__(self):
        self.recorded_at = None
        self.synced = False
        FakeEvent.created.append(self)

    def record(self):
        self.recorded_at = len(FakeEvent.created)

    def synchronize(self):
        self.synced = True

    def elapsed_time(self, end):
        assert end.synced, "elapsed_time read before the end event completed"
        return 12.5  # milliseconds, as CUDA events report


def test_event_clock_reports_seconds_and_waits_for_the_end_event():
    syncs = []
    clock = EventClock(make_event=FakeEvent, sync=lambda: syncs.append(1))
    out, seconds = clock.time_call(lambda: "done")
    assert out == "done" and seconds == 0.0125 and syncs == [1]
    start, end = FakeEvent.created[-2:]
    assert start.recorded_at is not None and end.synced


def test_cpu_device_gets_plain_wall_clocks():
    call, sample = clocks_for_device("cpu")
    assert isinstance(call, WallClock) and call.sync is None
    assert isinstance(sample, WallClock)
