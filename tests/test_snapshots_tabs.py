"""Every tab of the whole console (tab bar, host chips, footer) on the demo's data, at 160x45 and 100x30.

The world is what `gpudeck demo` shows once its story has played: `console.demo.setup()`
builds the demo (the `demo` profile, three sglang launch scripts, the task plan, the shipped
campaign) on a fixed root and port, and the records the demo itself wrote when it ran the
campaign to its end and then swept run_tp8_ep8_crash until it died at 256 streams (runs,
launch records, crash records, the campaign's state, the task board with its suggestions, the
servers' logs) are put back as they were recorded by tests/fixtures/demo/record.py.

Nothing on screen depends on when or where the test runs: no simulator is started; the GPUs
are the nvidia-smi stand-in's recorded answer after the crash, handed to each host's runtime as
its sampler (the runtime's own GPUsSampled event path); the chips' and the GPUs tab's clocks
are pinned; times are shown in UTC; the root is one fixed path, held under a lock.
"""
from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

from console import demo
from console.fleet import Fleet
from console.gpus import Snapshot
from console.gpus import fields as F
from console.gpus.flags import STALE_SAMPLES, FlagTracker
from console.gpus.model import OK
from console.gpus.parse_csv import parse_app_line, parse_gpu_line
from console.runtime.host_runtime import HostRuntime
from profiles import store
from screens.app import GpudeckApp
from tests.harness import wait_until

ROOT = Path("/tmp/gpudeck-demo-snapshot")  # the log's path is on screen: one place, the same every run
PORT = 30917                               # the port the demo's scripts and URL name (nothing listens)
RECORDED = Path(__file__).parent / "fixtures" / "demo"

# The recording's moments (UTC): the swept server died at 11:09:46; the GPUs were last
# sampled at 11:09:50, and the screen is looked at 0.4 s after that sample.
SAMPLED_AT = 1_796_036_990.0
NOW = SAMPLED_AT + 0.4
CONNECTED_AT = NOW - 125.0                 # the chips read "connected 2m05s"

TABS = {"gpus": "1", "server": "2", "bench": "3", "roofline": "4", "tasks": "5", "campaign": "6"}
SIZES = {"160x45": (160, 45), "100x30": (100, 30)}


# ------------------------------------------------------------------ the demo's world

@pytest.fixture
def demo_world(monkeypatch):
    """The demo after its story, at ROOT; the environment the demo changes is given back after."""
    for name in ("PATH", "GPUDECK_HOME", "GPUDECK_SIM_STATE_DIR", "TZ"):
        monkeypatch.setenv(name, os.environ.get(name, ""))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    ROOT.parent.mkdir(parents=True, exist_ok=True)
    with open(ROOT.with_name(ROOT.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run of these tests waits rather than sharing ROOT
        shutil.rmtree(ROOT, ignore_errors=True)
        world = demo.setup(ROOT, port=PORT)
        _put_back_records()
        try:
            yield world
        finally:
            # never world.stop(): it signals the recorded process groups, which are not ours
            shutil.rmtree(ROOT, ignore_errors=True)
    monkeypatch.undo()
    time.tzset()


def _put_back_records() -> None:
    """The files the demo's engine wrote when it ran (records, logs, campaign), as recorded."""
    world = RECORDED / "world"
    for source in sorted(p for p in world.rglob("*") if p.is_file()):
        target = ROOT / source.relative_to(world)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.read_text().replace("{root}", str(ROOT)))


def demo_gpus(host: str) -> Snapshot:
    """The stand-in's recorded answer after the crash, read as the sampler reads its stream:
    the same sample three times in a row, so the stuck GPUs are flagged STALE as they are live."""
    lines = (RECORDED / "nvidia-smi-gpus.csv").read_text().splitlines()
    apps = (RECORDED / "nvidia-smi-apps.csv").read_text().splitlines()
    tracker = FlagTracker()
    snap = None
    for _ in range(STALE_SAMPLES):
        snap = Snapshot(state=OK, message="", gpus=[parse_gpu_line(line, F.GPU_FIELDS) for line in lines],
                        processes=[parse_app_line(line) for line in apps if line.strip()], processes_known=True,
                        taken_at=SAMPLED_AT, host=host, source="nvidia-smi", simulated=True)
        tracker.apply(snap)
    return snap


class RecordedSampler:
    """A host runtime's sampler that yields the recorded sample once, then nothing more."""

    interval_s = 1.0

    def __init__(self, session) -> None:
        self.host = session.name

    async def snapshots(self):
        yield demo_gpus(self.host)
        await asyncio.Event().wait()  # the runtime cancels this when the app closes


def demo_app() -> GpudeckApp:
    """The app `gpudeck demo` opens, with every host's runtime sampling the recorded GPUs."""
    profiles, errors = store.load_all()
    assert not errors, errors
    fleet = Fleet(profiles)
    for name in fleet.names():
        fleet.runtimes[name] = HostRuntime(fleet.session(name), sampler_factory=RecordedSampler)
        host = fleet.hosts[name]
        host.status = replace(host.status, since=CONNECTED_AT)
    return GpudeckApp(profile_name="demo", fleet=fleet)


# ------------------------------------------------------------------ waiting for each tab

def _loaded(app: GpudeckApp) -> dict[str, bool]:
    """Whether each tab has drawn everything it will draw (no worker still reading)."""
    from widgets.log_view import LogView

    panes = app.panes
    server, bench, campaign = panes["server"], panes["bench"], panes["campaign"]
    return {
        "gpus": panes["gpus"].snapshot is not None and "STALE" in app.summaries.get("gpus", ""),
        "server": len(server.configs) == 3 and server.last_crash is not None
        and server.query_one(LogView).line_count > 0,
        "bench": bool(bench.view.run_id) and bool(bench._error_text),
        "roofline": app.summaries.get("roofline", "").endswith("%"),
        "tasks": bool(app.summaries.get("tasks")),
        "campaign": campaign.state is not None and campaign.roof is not None,
    }


def _open_tab(tab: str):
    async def run_before(pilot) -> None:
        app = pilot.app
        app.chip_bar.clock = lambda: NOW
        app.panes["gpus"].clock = lambda: NOW
        app._refresh_chips()
        await wait_until(pilot, lambda: all(_loaded(app).values()),
                         what=f"every tab drawn ({', '.join(k for k, v in _loaded(app).items() if not v)} not yet)")
        await pilot.press(TABS[tab])
        await pilot.pause()
        assert app.tabs.active == tab
    return run_before


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("tab", list(TABS))
def test_tab(snap_compare, demo_world, tab, size):
    assert snap_compare(demo_app(), terminal_size=SIZES[size], run_before=_open_tab(tab))
