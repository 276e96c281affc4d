"""The GPUs tab: live rows for the current host, the stale-counter warning,
the process table, and a fleet overview of every profile (f, then Enter)."""
from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Callable

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from console.gpus import SamplerGroup, Snapshot, fleet_row, stale_warning
from console.gpus.history import UtilHistory
from console.gpus.model import OK
from console.gpus.proc_stats import PROCESS_SORTS, sort_processes
from console.gpus.text import age
from console.runtime import events as ev
from console.safe_text import clean_line, safe_text
from widgets.gpu_fleet import FleetTable
from widgets.gpu_processes import GPUProcessTable
from widgets.gpu_table import SPARK_WIDTH, GPUTable
from widgets.static_text import show

from .pane import Pane
from .throttle import Throttle, on_screen


class GPUsPane(Pane):
    TAB_TITLE = "GPUs"
    BINDINGS = [
        Binding("f", "toggle_fleet", "fleet"),
        Binding("o", "open_host", "open host"),
        Binding("s", "sort_processes", "sort: memory"),  # its words name the order now (set_key_words)
    ]
    DEFAULT_CSS = """
    GPUsPane #gpus-status { height: 1; color: $text-muted; }
    GPUsPane #gpus-error { display: none; padding: 1 2; color: $error; text-style: bold; }
    GPUsPane #gpus-warning { display: none; height: auto; padding: 0 1; margin: 1 0 0 0;
                             color: $text; background: $error 40%; text-style: bold; }
    GPUsPane #gpus-proc-label { height: 1; margin: 1 0 0 0; text-style: bold; }
    GPUsPane #gpus-fleet { display: none; }
    GPUsPane #gpus-fleet-label { height: 1; text-style: bold; }
    GPUsPane.-fleet #gpus-fleet { display: block; }
    GPUsPane.-fleet #gpus-host { display: none; }
    """

    class OpenHost(Message):
        """The operator chose a host in the fleet view; the app switches to it."""

        def __init__(self, name: str) -> None:
            self.name = name
            super().__init__()

    RUNTIME_PARTS = {"gpus": True, "servers": False, "watch": False}

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.clock: Callable[[], float] = time.time
        self.fleet_factory = self._fleet_of_profiles
        self.snapshot: Snapshot | None = None
        self.history = UtilHistory()
        self.fleet: SamplerGroup | None = None   # a private sampler group, only without the app's runtimes
        self.fleet_shown = False
        self.process_sort = PROCESS_SORTS[0]  # the process list's order; s cycles it
        self.interval_s = 1.0
        self._summary = None
        self._draws = Throttle(self, self._draw_snapshot, 0.0)  # a hidden tab draws its last sample when shown

    def compose(self):
        with Vertical(id="gpus-host"):
            yield Static("waiting for the first sample…", id="gpus-status")
            yield Static(id="gpus-error")
            yield GPUTable(id="gpus-table")
            yield Static(id="gpus-warning")
            yield Static("Processes", id="gpus-proc-label")
            yield GPUProcessTable(id="gpus-procs")
        with Vertical(id="gpus-fleet"):
            yield Static("Fleet: every profile · Enter or o opens a host · f back", id="gpus-fleet-label")
            yield FleetTable(id="gpus-fleet-table")

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    # ------------------------------------------------------------ host view

    async def set_session(self, session) -> None:
        await super().set_session(session)
        runtime = self.runtime
        self.snapshot = None
        self._summary = None
        self.history.clear()
        self.query_one(GPUTable).reset()
        self.query_one(GPUProcessTable).show([])
        self.query_one("#gpus-status", Static).update(safe_text(f"{runtime.name} · waiting for the first sample…"))
        if runtime.snapshot is not None:  # the host's runtime has been sampling all along
            self.show_snapshot(runtime.snapshot)

    @property
    def owners(self) -> dict[int, str]:
        """pid -> launch config, from the runtime's launch records."""
        return self.runtime.owners if self.runtime else {}

    @property
    def last_crash(self):
        """The host's latest crash record, to explain stale GPUs."""
        return self.runtime.last_crash if self.runtime else None

    def runtime_event(self, event: ev.RuntimeEvent) -> None:
        if isinstance(event, ev.GPUsSampled):
            self.interval_s = self.runtime.gpu_interval_s or self.interval_s
            self._record(event.snapshot)
            self._draws.request()

    def on_show(self) -> None:
        # the tab first appears as it was left, at once; the latest sample and its age follow a frame later
        self.call_after_refresh(self._catch_up)

    def _catch_up(self) -> None:
        self._draws.flush()
        self._tick()

    def all_hosts_event(self, event: ev.RuntimeEvent) -> None:
        if isinstance(event, ev.GPUsSampled) and self.fleet_shown and self.fleet is None:
            self._show_fleet()

    async def on_unmount(self) -> None:
        """End the streams before the app's event loop goes away."""
        workers = [w for w in self.workers if w.node is self]
        for worker in workers:
            worker.cancel()
        for worker in workers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(worker.wait(), 5.0)
        if self.fleet is not None:
            await self.fleet.close()

    def show_snapshot(self, snap: Snapshot) -> None:
        """Draw one sample (also the entry point for tests and the demo)."""
        self._record(snap)
        self._draw_snapshot()

    def _record(self, snap: Snapshot) -> None:
        """Keep a sample (the sparklines' history and the tab title), drawn or not."""
        self.snapshot = snap
        self.history.add(snap)
        summary = snap.summary()
        if summary != self._summary:
            self._summary = summary
            self.set_summary(summary)

    def _draw_snapshot(self) -> None:
        snap = self.snapshot
        if snap is None:
            return
        error = self.query_one("#gpus-error", Static)
        table = self.query_one(GPUTable)
        procs = self.query_one(GPUProcessTable)
        label = self.query_one("#gpus-proc-label", Static)
        warning = self.query_one("#gpus-warning", Static)
        if snap.state != OK:
            show(error, Text.assemble(("✖ ", "bold red"), (snap.state, "bold red"), "  ",
                                      clean_line(snap.message or "")))
            error.display = True
            for widget in (table, procs, label, warning):
                widget.display = False
        else:
            error.display = False
            # each set once a sample: showing the process table only to hide it again laid the screen out twice
            table.display = label.display = True
            now = snap.taken_at or self.clock()
            sparks = {str(g.key): self.history.buckets(g.key, SPARK_WIDTH, now) for g in snap.gpus}
            table.show(snap.gpus, sparks)
            text = stale_warning(snap)
            if text and self.last_crash:
                crash = self.last_crash
                text += f" (server {crash.config} crashed {crash.clock}: {crash.cls})"
            warning.display = bool(text)
            if text:
                show(warning, safe_text(text))  # names a crashed config: literal text
            if not snap.processes_known:
                show(label, Text("Processes  (unknown: the process list could not be read)"), fixed_size=True)
            else:
                show(label, Text("Processes" + ("  (none)" if not snap.processes else "")), fixed_size=True)
            procs.show(sort_processes(snap.processes, self.process_sort), self.owners)
            procs.display = bool(snap.processes)
        self._tick()

    def action_sort_processes(self) -> None:
        """The next order of the process list (memory, CPU, RSS, pid, name), named in the footer."""
        self.process_sort = PROCESS_SORTS[(PROCESS_SORTS.index(self.process_sort) + 1) % len(PROCESS_SORTS)]
        self.set_key_words("sort_processes", f"sort: {self.process_sort}")
        self._draw_snapshot()

    def _tick(self) -> None:
        """Once a second: the sample age, and the fleet ages."""
        status = self.query_one("#gpus-status", Static)
        snap = self.snapshot
        name = self.session.name if self.session else "?"
        if snap is None or not on_screen(self):
            return  # a hidden tab's ages are drawn when it is shown (on_show draws the sample)
        now = self.clock()
        parts: list = [Text(name, style="bold"), f" · {snap.source}"]
        sample_age = snap.age(now)
        if sample_age is not None:
            interval = self.interval_s
            old = sample_age > max(3.0, 3 * interval)
            parts.append(Text(f" · sample {age(sample_age)} ago", style="bold yellow" if old else ""))
        if snap.sample_stale and snap.state == OK:
            parts.append(safe_text(f" · NO SIGNAL: {snap.stale_reason}", style="bold yellow"))
        elif snap.state != OK:
            retry = snap.stale_reason.rpartition("; ")[2] if snap.stale_reason else ""
            parts.append(safe_text(f" · {snap.state}" + (f" · {retry}" if retry else ""), style="bold red"))
        if snap.simulated:
            parts.append(Text(" · SIMULATED", style="bold magenta"))
        show(status, Text.assemble(*parts), fixed_size=True)  # one line across the pane (height 1)
        if self.fleet_shown:
            self._show_fleet()

    # ------------------------------------------------------------ fleet view

    def action_toggle_fleet(self) -> None:
        if self.fleet_shown:
            self.fleet_shown = False
            self.remove_class("-fleet")
            self.workers.cancel_group(self, "gpus-fleet")
            if self.fleet is not None:
                fleet, self.fleet = self.fleet, None
                self.run_worker(fleet.close(), group="gpus-fleet-close")
        else:
            self.fleet_shown = True
            self.add_class("-fleet")
            if self._app_runtimes() is None:  # a pane on its own samples every profile itself
                self.fleet = self.fleet_factory()
                self.run_worker(self._watch_fleet(self.fleet), group="gpus-fleet", exclusive=True,
                                exit_on_error=False)
            self._show_fleet()
            self.query_one(FleetTable).focus()

    def _app_runtimes(self) -> dict | None:
        fleet = getattr(self.app, "fleet", None)
        return getattr(fleet, "runtimes", None) or None

    def _show_fleet(self) -> None:
        """One row per profile, from the same snapshots the host view draws (so they agree)."""
        now = self.clock()
        runtimes = self._app_runtimes()
        if runtimes is not None and self.fleet is None:
            # reachable as each host's chip says (the runtime's link), not only as its last sample says
            rows = [fleet_row(name, rt.snapshot, now, link_down=not rt.reachable) for name, rt in runtimes.items()]
        elif self.fleet is not None:
            rows = self.fleet.rows(now)
        else:
            return
        self.query_one(FleetTable).show(rows)

    async def _watch_fleet(self, fleet: SamplerGroup) -> None:
        async with contextlib.aclosing(fleet.updates()) as updates:
            async for _name, _snap in updates:
                if self.fleet is not fleet:
                    return
                self._show_fleet()

    def _fleet_of_profiles(self) -> SamplerGroup:
        """Every saved profile, sampled by this pane (used only without the app's runtimes)."""
        from profiles import store

        profiles, _bad = store.load_all()
        return SamplerGroup.from_profiles(profiles)

    def action_open_host(self) -> None:
        if not self.has_class("-fleet"):
            return
        name = self.query_one(FleetTable).selected_name
        if name:
            self.post_message(self.OpenHost(name))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if isinstance(event.data_table, FleetTable):
            event.stop()
            self.post_message(self.OpenHost(event.row_key.value))


