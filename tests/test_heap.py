"""The collector kept out of the operator's keys: what the console built is frozen once it has
started, a sweep comes only while nobody types, and frozen garbage is reclaimed by that sweep."""
from __future__ import annotations

import gc
import weakref

from textual.app import App
from textual.widgets import Static

from console.heap import HeapKeeper
from screens.orderly_exit import OrderlyExit
from screens.quiet_heap import QuietHeap


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Node:
    """Something that can sit in a reference cycle."""
    def __init__(self) -> None:
        self.other = None


def _cycle() -> weakref.ref:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_settle_freezes_what_survives_and_release_thaws_it():
    keeper = HeapKeeper()
    try:
        keeper.settle()
        assert gc.get_freeze_count() > 0
    finally:
        keeper.release()
    assert gc.get_freeze_count() == 0


def test_a_sweep_waits_for_quiet_and_for_its_interval():
    clock = Clock()
    keeper = HeapKeeper(clock=clock, quiet_s=30, every_s=600)
    try:
        keeper.settle()
        clock.now += 700
        keeper.touched()                    # a key just now
        assert not keeper.sweep_if_quiet()
        clock.now += 29
        assert not keeper.sweep_if_quiet()  # still within the quiet time
        clock.now += 2
        assert keeper.sweep_if_quiet()
        clock.now += 100
        assert not keeper.sweep_if_quiet()  # quiet, but the last sweep is recent
        assert keeper.sweeps == 1
    finally:
        keeper.release()


def test_a_cycle_frozen_while_alive_is_reclaimed_by_the_next_sweep():
    clock = Clock()
    keeper = HeapKeeper(clock=clock, quiet_s=30, every_s=600)
    holder = [None]
    try:
        ref = _cycle()
        holder[0] = ref()
        keeper.settle()                     # the cycle is alive and gets frozen
        holder[0] = None                    # now it is garbage, but frozen
        gc.collect()
        assert ref() is not None            # the plain collector no longer sees it
        clock.now += 601
        assert keeper.sweep_if_quiet()
        assert ref() is None
    finally:
        keeper.release()


async def test_the_app_settles_once_started_and_thaws_on_exit():
    """Every key reaches the keeper (the app's on_event), and a run_test exit thaws the heap."""
    class Probe(OrderlyExit, QuietHeap, App):
        def compose(self):
            yield Static("x")

        def on_mount(self) -> None:
            self.settle_heap()

    app = Probe()
    async with app.run_test() as pilot:
        assert app.heap is not None and app.heap.frozen
        assert gc.get_freeze_count() > 0
        before = app.heap.last_input
        await pilot.press("x")
        assert app.heap.last_input > before
    assert gc.get_freeze_count() == 0


async def test_the_console_settles_its_heap_once_every_tab_is_built(demo_world):
    from screens.app import GpudeckApp

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)):
        await app.started.wait()
        assert app.heap is not None and app.heap.frozen
        assert len(app.panes) == 6
        assert gc.get_freeze_count() > 50_000     # the six tabs' widgets, styles and caches
    assert gc.get_freeze_count() == 0
