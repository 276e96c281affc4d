"""The level's inferences: each fires only when every part of its rule is in the data."""
from __future__ import annotations

from console.bench import inferences
from console.store.timeline import TimelineWriter


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def level(tl: TimelineWriter, clock: Clock, seconds: int, client, server=None, gpu=None) -> None:
    """One level 0 of `seconds`: client(s) -> tok/s, server(s) -> (running, waiting, kv, preemptions)."""
    tl.mark(tl.now(), "level-start", "level starts", 0)
    for s in range(seconds):
        clock.now = float(s + 1)
        tl.add("client", tl.now(), 0, client(s), 8)
        if server is not None:
            tl.add("server", tl.now(), tl.now(), *server(s), None)
        if gpu is not None:
            tl.add("gpu", tl.now(), 0, 100.0, 70_000.0, *gpu(s), "")


def writer() -> tuple[TimelineWriter, Clock]:
    clock = Clock()
    return TimelineWriter(None, clock=clock), clock


def test_kv_cache_full_preemptions_rising_and_throughput_falling_is_the_kv_limit():
    tl, clock = writer()
    level(tl, clock, 12, client=lambda s: 1000.0 if s < 6 else 600.0,
          server=lambda s: (64, 10, 0.6 if s < 6 else 1.0, float(max(0, s - 5) * 3)))
    notes = inferences.for_level(tl, 0, {}, None)
    assert any(n.startswith("inference: ") and "the KV cache is the limit" in n for n in notes), notes


def test_kv_cache_full_without_a_preemption_counter_says_nothing():
    tl, clock = writer()
    level(tl, clock, 12, client=lambda s: 1000.0 if s < 6 else 600.0,
          server=lambda s: (64, 10, 1.0, None))
    assert not any("KV cache" in n for n in inferences.for_level(tl, 0, {}, None))


def test_power_at_the_cap_with_the_clock_down_is_power_throttled():
    tl, clock = writer()
    # power_w, power_limit_w, sm_clock_mhz, sm_clock_max_mhz
    level(tl, clock, 6, client=lambda s: 500.0, gpu=lambda s: (598.0, 600.0, 1440.0, 2000.0))
    notes = inferences.for_level(tl, 0, {}, None)
    assert "inference: GPU 0 power at the cap and SM clock 28% below max: power-throttled" in notes


def test_full_power_at_full_clock_is_not_throttled():
    tl, clock = writer()
    level(tl, clock, 6, client=lambda s: 500.0, gpu=lambda s: (598.0, 600.0, 1990.0, 2000.0))
    assert not any("power" in n for n in inferences.for_level(tl, 0, {}, None))


def test_waiting_below_max_num_seqs_is_the_scheduler_cap():
    tl, clock = writer()
    level(tl, clock, 6, client=lambda s: 500.0, server=lambda s: (40, 24, 0.5, None))
    notes = inferences.for_level(tl, 0, {}, {"max-num-seqs": 256})
    assert "inference: requests waiting while running stayed below max-num-seqs (40 of 256): " \
           "the scheduler cap" in notes
    assert not any("scheduler" in n for n in inferences.for_level(tl, 0, {}, None))  # no cap known: silent


def test_no_token_long_before_the_death_is_a_hang_before_the_crash():
    tl, clock = writer()
    tl.mark(0.0, "level-start", "level starts", 0)
    tl.add("requests", 0.1, 0.2, 5.0, 40, False, 0)
    tl.mark(35.0, "first failure", "connection reset", 0)
    clock.now = 36.0
    notes = inferences.for_level(tl, 0, {"server_died": {"since": "14:02:11"}}, None, itl_p99_ms=40.0)
    assert len(notes) == 1 and notes[0].startswith("inference: no token for 30 s before the server died at ")
    assert notes[0].endswith(": hung before the crash")
    # a death right after the last token, or one a slow-token level explains, is no hang
    assert inferences.for_level(tl, 0, {"server_died": {"since": "x"}}, None, itl_p99_ms=4000.0) == []
    assert inferences.for_level(tl, 0, {}, None) == []
