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
from textual.widgets import Tabs

from console import demo
from console.gpus import Snapshot
from console.gpus import fields as F
from console.gpus.flags import FlagTracker
from console.gpus.model import OK
from console.gpus.parse_csv import parse_app_line, parse_gpu_line
from console.runtime.fleet import Fleet
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
    _port_is_free()
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


def _port_is_free() -> None:
    import socket

    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", PORT)) == 0:
            pytest.fail(f"something listens on 127.0.0.1:{PORT}, the demo's port here: the Bench tab "
                        "would ask it for models. Stop it and run again.", pytrace=False)


def _put_back_records() -> None:
    """The files the demo's engine wrote when it ran (records, logs, campaign), as recorded."""
    world = RECORDED / "world"
    for source in sorted(p for p in world.rglob("*") if p.is_file()):
        target = ROOT / source.relative_to(world)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.read_text().replace("{root}", str(ROOT)))


class RecordedSampler:
    """A host runtime's sampler that answers, every interval, what the stand-in answered after the
    crash: parsed as the sampler parses its stream, flagged by the same tracker (STALE needs three
    samples in a row), always stamped SAMPLED_AT."""

    interval_s = 0.2

    def __init__(self, session) -> None:
        self.host = session.name
        self.tracker = FlagTracker()

    def sample(self) -> Snapshot:
        lines = (RECORDED / "nvidia-smi-gpus.csv").read_text().splitlines()
        apps = (RECORDED / "nvidia-smi-apps.csv").read_text().splitlines()
        snap = Snapshot(state=OK, message="", gpus=[parse_gpu_line(line, F.GPU_FIELDS) for line in lines],
                        processes=[parse_app_line(line) for line in apps if line.strip()], processes_known=True,
                        taken_at=SAMPLED_AT, host=self.host, source="nvidia-smi", simulated=True)
        return self.tracker.apply(snap)

    async def snapshots(self):
        while True:  # the runtime cancels this when the app closes
            yield self.sample()
            await asyncio.sleep(self.interval_s)


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
        "gpus": "STALE" in app.summaries.get("gpus", "")
        and "run_tp8_ep8_crash crashed" in str(panes["gpus"].query_one("#gpus-warning").render()),
        "server": len(server.configs) == 3 and server.last_crash is not None
        and server.query_one(LogView).line_count > 0,
        "bench": bool(bench.view.run_id) and bool(bench._error_text),
        "roofline": app.summaries.get("roofline", "").endswith("%"),
        "tasks": bool(app.summaries.get("tasks")),
        "campaign": campaign.state is not None and campaign.roof is not None and campaign.answered()
        and app.summaries.get("campaign", "").endswith(_campaign_tally(campaign.state)),
    }


def _campaign_tally(state) -> str:
    """The end of the Campaign tab's title for the state its pane holds (`5/5 ✖1`): the title
    comes in a message after the pane has read the state, so the picture waits for it."""
    crashed = sum(1 for c in state.cells if c.status == "crashed")
    return f"/{len(state.cells)}" + (f" ✖{crashed}" if crashed else "")


def _open_tab(tab: str):
    async def run_before(pilot) -> None:
        app = pilot.app
        app.chip_bar.clock = lambda: NOW
        app.panes["gpus"].clock = lambda: NOW
        app._refresh_chips()
        await wait_until(pilot, lambda: all(_loaded(app).values()), what="every tab drawn (see _loaded)")
        await pilot.press(TABS[tab])
        await wait_until(pilot, lambda: app.tabs.active == tab, what=f"the {tab} tab")
        # At 100 columns the tab strip overflows. Textual centres the chosen title after a refresh,
        # from a layout that may predate the last title change, so the strip's offset varies from
        # run to run; the pictures are of the tab's content, so centre it once more, now.
        strip = app.tabs.query_one(Tabs)
        strip.query_one("#tabs-scroll").scroll_to_center(strip.active_tab, animate=False, force=True,
                                                         immediate=True)
        await pilot.pause()
    return run_before


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("tab", list(TABS))
def test_tab(snap_compare, demo_world, tab, size):
    assert snap_compare(demo_app(), terminal_size=SIZES[size], run_before=_open_tab(tab))


# ------------------------------------------------------------------ what the pictures rest on

async def test_a_campaigns_derived_scripts_are_not_launch_configs(demo_world):
    """The campaign left its grid cells' scripts, hidden, in the scripts folder: the Server tab
    lists the operator's three configs, not those."""
    from console.servers import configs as cfgs
    from console.session import HostSession

    assert any(p.name.startswith(".gpudeck-campaign-") for p in (ROOT / "scripts").iterdir())
    found = await cfgs.discover(HostSession.open(store.load("demo")))
    assert [c.name for c in found] == ["run_tp8_cds16", "run_tp8_ep8_crash", "run_tp8_ep8_memsafe"]


async def test_a_finished_campaign_shows_how_long_it_ran(demo_world):
    """Its elapsed time comes from its own start and end, even when the tab opens after the
    runtime first read the campaign (not N/A)."""
    app = demo_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: all(_loaded(app).values()), what="every tab drawn")
        title = str(app.panes["campaign"].query_one("#camp-title").render())
        assert "finished" in title and "elapsed 2m54s" in title, title


async def test_footers_fit_a_100_column_split(demo_world):
    """At 100 columns every tab's footer shows all its keys, each whole and none under the
    palette key (Tasks' pairs share an entry: +- priority)."""
    from widgets.steady_footer import SteadyFooter

    app = demo_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: all(_loaded(app).values()), what="every tab drawn")
        for tab, key in TABS.items():
            await pilot.press(key)
            pane = app.panes[tab]
            await wait_until(pilot, lambda: app.tabs.active == tab and pane.has_focus_within,
                             what=f"the {tab} tab open, with the focus (its keys in the footer)")
            # the footer looks at its keys after a refresh and rebuilds when they changed; then lays them out
            footer = app.screen.query_one(SteadyFooter)
            await wait_until(pilot, lambda: footer.shows_current_keys()
                             and footer.shown_keys() and footer.shown_keys()[0].region.width > 0,
                             what=f"the {tab} footer rebuilt and laid out")
            keys = [k for k in footer.shown_keys() if not k.has_class("-command-palette")]
            palette = app.screen.query_one("FooterKey.-command-palette")
            assert keys[0].key_display == "?"
            shown = [f"{k.key_display} {k.description}" for k in keys]
            assert all(k.region.width > 0 for k in keys), f"the {tab} footer hides keys: {shown}"
            right = max(k.region.right for k in keys)
            assert right <= palette.region.x, f"the {tab} footer runs to column {right}, under the palette: {shown}"


def test_the_recording_names_no_checkout_and_brings_no_profile():
    """The recorded world must work from any clone: no path into a source checkout (the recorder's
    own, gone on another machine), and no profile or launch script (demo.setup() writes those)."""
    import re

    checkout_path = re.compile(r"/[\w.+-]+/console/")
    world = RECORDED / "world"
    assert not (world / "home" / "config").exists()
    assert not [name for name in demo.SCRIPTS if (world / "scripts" / name).exists()]
    named = [str(p.relative_to(RECORDED)) for p in world.rglob("*") if p.is_file()
             and checkout_path.search(p.read_text(errors="replace"))]
    assert not named, f"recorded files name a source checkout: {named}"
