"""The fleet view: hundreds of GPUs from Prometheus on one screen, one row per host.

Opened by `gpudeck` on a Prometheus profile and by `gpudeck demo --fleet`.
It is its own small App rather than a sixth tab: a Prometheus fleet has no
shell on any host, so the launch, bench and task panes have nothing to act
on. The engine's `PrometheusFleet` does the reading; this screen subscribes
to its samples, sorts, filters and draws.
"""
from __future__ import annotations

import time
from dataclasses import replace

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from console.gpus.fleet_table import SORT_KEYS, aged, filter_rows, host_rows, sort_rows
from console.gpus.prometheus import FleetSample, PrometheusFleet
from console.gpus.ranges import physical
from console.gpus.text import age
from console.safe_text import clean_line
from widgets.fleet_hosts import FleetHostsTable
from widgets.fleet_servers import FleetServersTable
from widgets.gpu_table import SPARK_WIDTH, GPUTable
from widgets.keys_panel import KeysPanel

from .orderly_exit import OrderlyExit
from .palette import FleetKeysProvider, fleet_key_groups


class FleetSampled(Message):
    def __init__(self, sample: FleetSample) -> None:
        super().__init__()
        self.sample = sample


class HostGPUs(Screen):
    """One host's GPUs, drilled into from the fleet table; Esc goes back."""

    BINDINGS = [Binding("escape", "app.pop_screen", "back"), Binding("q", "app.quit", "quit")]

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host
        self.sparks: dict[str, list] = {}
        self.history_problem = ""  # said under the note, never in its place

    def compose(self) -> ComposeResult:
        yield Static(id="host-title")
        yield GPUTable(id="host-gpus")
        yield Static(id="host-note")
        yield Footer()

    def on_mount(self) -> None:
        self.load_history()
        self.refresh_from(self.app.latest)

    @work(exclusive=True)
    async def load_history(self) -> None:
        """Five minutes of utilisation per GPU: one range query for this host."""
        escaped = self.host.replace("\\", "\\\\").replace('"', '\\"')
        try:
            series = await self.app.fleet.history(f'DCGM_FI_DEV_GPU_UTIL{{Hostname="{escaped}"}}', 300, 300 / SPARK_WIDTH)
        except Exception as exc:  # the table still shows live values; say why there is no history
            self.history_problem = f"no history: {clean_line(exc)}"
            self.refresh_from(self.app.latest)
            return
        for labels, values in series:
            key = labels.get("UUID") or labels.get("gpu")
            self.sparks[str(key)] = [physical("util_gpu_pct", v) for _t, v in values][-SPARK_WIDTH:]
        self.refresh_from(self.app.latest)

    def refresh_from(self, sample: FleetSample | None) -> None:
        snap = next((h for h in (sample.hosts if sample else []) if h.host == self.host), None)
        title = Text.assemble((f" {clean_line(self.host)} ", "bold reverse"), "  GPUs from DCGM via Prometheus")
        if sample and sample.simulated:
            title.append("  SIMULATED", style="bold magenta")
        if snap is None:
            title.append("  · no data for this host in the last sample", style="yellow")
        elif snap.state != "ok":
            title.append(f"  · {snap.state}: {clean_line(snap.message)}", style="bold red")
        elif snap.sample_stale:
            title.append(f"  · STALE: {clean_line(snap.stale_reason)}", style="bold yellow")
        self.query_one("#host-title", Static).update(title)
        table = self.query_one("#host-gpus", GPUTable)
        gpus = snap.gpus if snap is not None else []
        for g in gpus:   # live values extend the history
            spark = self.sparks.setdefault(str(g.key), [])
            spark.append(g.util_gpu_pct)
            del spark[:-SPARK_WIDTH]
        table.show(gpus, self.sparks)
        pods = sorted({w for g in gpus for w in g.workloads})
        note = "P-state, throttle reasons and per-process memory are not in DCGM's default series: N/A."
        row = next((r for r in host_rows([snap], time.time())), None) if snap is not None else None
        if pods:
            note = "workloads: " + clean_line(", ".join(pods)) + "\n" + note
        text = Text()
        if row is not None and row.notes:  # the fleet table may cut a note; here it is whole
            text.append("notes: " + clean_line(row.notes) + "\n", style="bold")
        text.append(note, style="dim")
        if self.history_problem:
            text.append("\n" + self.history_problem, style="yellow")
        self.query_one("#host-note", Static).update(text)


class FleetApp(OrderlyExit, App):
    """Hosts of one Prometheus profile, sortable and filterable; Enter drills into a host."""

    TITLE = "gpudeck fleet"
    CSS = """
    #fleet-title { height: 1; }
    #fleet-filter { display: none; }
    #fleet-filter.shown { display: block; }
    FleetHostsTable { height: 1fr; }
    #servers-title { height: 1; margin-top: 1; }
    #fleet-note { height: 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("slash", "filter", "filter"),
        Binding("s", "toggle_stale", "stale only"),
        Binding("x", "toggle_xid", "XID only"),
        Binding("o", "sort_next", "sort"),
        Binding("O", "sort_reverse", "reverse"),
        Binding("enter", "drill", "host GPUs"),
        Binding("escape", "clear_filter", "clear filter", show=False),
        Binding("question_mark", "help", "keys"),
        Binding("escape", "close_help", "close keys", show=False, priority=True),
    ]
    COMMANDS = App.COMMANDS | {FleetKeysProvider}

    sort_column: reactive[str] = reactive("state")
    descending: reactive[bool] = reactive(False)
    stale_only: reactive[bool] = reactive(False)
    xid_only: reactive[bool] = reactive(False)
    filter_text: reactive[str] = reactive("")

    def __init__(self, fleet: PrometheusFleet, profile_name: str, interval_s: float = 1.0) -> None:
        super().__init__()
        self.fleet = fleet
        self.profile_name = profile_name
        self.interval_s = interval_s
        self.latest: FleetSample | None = None
        self.last_good_at: float | None = None
        self.shown_count = 0      # hosts through the filter, as last drawn

    def compose(self) -> ComposeResult:
        yield Static(id="fleet-title")
        yield Input(placeholder="filter hosts: name, state or note (Enter keeps it, Esc clears)", id="fleet-filter")
        yield FleetHostsTable(id="fleet-hosts")
        yield Static(Text("Servers (from their own /metrics, scraped by the same Prometheus)", style="bold"),
                     id="servers-title")
        yield FleetServersTable(id="fleet-servers")
        yield Static(Text("not shown by DCGM: per-process GPU memory and process names"), id="fleet-note")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(FleetHostsTable).focus()
        self.draw_title()
        self.poll()
        # a refresh that is late shows at once (the title and the Age column), not when it completes
        self.set_interval(1.0, self.redraw)

    async def on_unmount(self) -> None:
        await self.fleet.close()

    @work(exclusive=True, group="fleet")
    async def poll(self) -> None:
        async for sample in self.fleet.samples(self.interval_s):
            self.post_message(FleetSampled(sample))

    def on_fleet_sampled(self, message: FleetSampled) -> None:
        if not self.query("#fleet-title"):
            return      # a refresh that ended as the app closed: nothing left to draw it on
        self.latest = message.sample
        if not message.sample.error:
            self.last_good_at = message.sample.taken_at
        self.redraw()
        if isinstance(self.screen, HostGPUs):
            self.screen.refresh_from(self.latest)

    def on_fleet_hosts_table_moved(self, _message) -> None:
        if not self.query(FleetHostsTable):
            return             # the app is closing and its table is gone: a late move has no title to fix
        self.draw_title()      # "rows 41-80": which hosts the screen shows

    def late_by(self) -> float | None:
        """Seconds without a finished refresh when one is overdue; None while refreshes are on time."""
        return self.fleet.late_by(self.interval_s)

    def visible_rows(self):
        """The sample's rows (built once by the engine), aged to now, filtered and sorted."""
        if self.latest is None:
            return []
        rows = aged(list(self.latest.rows), time.time())
        late = self.late_by()
        if late is not None:   # nothing is live while the refresh is overdue
            why = f"refresh overdue: no answer from Prometheus for {age(late)}"
            rows = [replace(row, sample_stale=True, message=why) for row in rows]
        rows = filter_rows(rows, self.filter_text, self.stale_only, self.xid_only)
        return sort_rows(rows, self.sort_column, self.descending)

    def redraw(self) -> None:
        if self.latest is None or self.latest.error:
            self.draw_title()
            return      # keep the last good rows; the title says they are stale
        rows = self.visible_rows()
        table = self.query_one(FleetHostsTable)
        table.show(rows)
        self.shown_count = len(rows)
        self.draw_title()
        self.query_one(FleetServersTable).show(self.latest.servers)

    def draw_title(self) -> None:
        title = Text.assemble((" gpudeck fleet ", "bold reverse"), f"  {clean_line(self.profile_name)}  ")
        sample = self.latest
        if sample is not None and sample.simulated:
            title.append("SIMULATED  ", style="bold magenta")
        if sample is None:
            title.append("waiting for the first answer from Prometheus…", style="yellow")
        elif sample.error:
            title.append(f"✖ {clean_line(sample.error)}", style="bold red")
            if self.last_good_at is not None:
                title.append(f"  · rows are STALE: last good answer {age(time.time() - self.last_good_at)} ago",
                             style="bold yellow")
        else:
            hosts = len(sample.hosts)
            gpus = sum(len(h.gpus) for h in sample.hosts)
            title.append(f"{hosts} hosts · {gpus} GPUs · showing {self.shown_count}")
            first, last, total = self.query_one(FleetHostsTable).span
            if total > last - first + 1:   # more hosts than the screen: say which ones are on it
                title.append(f" (rows {first}-{last}; PgUp/PgDn, Home/End)", style="dim")
            late = self.late_by()
            if late is not None:
                title.append(f"  · STALE: refresh overdue, no answer from Prometheus for {age(late)}",
                             style="bold yellow")
            else:
                title.append(f"  · refreshed {age(time.time() - sample.taken_at)} ago", style="dim")
            if sample.unreadable_line:
                title.append(f"  · {sample.unreadable_line}", style="bold yellow")
        arrow = "↓" if self.descending else "↑"
        title.append(f"  · sort {self.sort_column} {arrow}", style="dim")
        filters = [f for f, on in (("stale only", self.stale_only), ("XID only", self.xid_only)) if on]
        if self.filter_text:
            filters.append(f"text '{self.filter_text}'")
        if filters:
            title.append("  · " + ", ".join(filters), style="bold cyan")
        self.query_one("#fleet-title", Static).update(title)

    def watch_sort_column(self) -> None:
        self.redraw()

    def watch_descending(self) -> None:
        self.redraw()

    def watch_stale_only(self) -> None:
        self.redraw()

    def watch_xid_only(self) -> None:
        self.redraw()

    def watch_filter_text(self) -> None:
        self.redraw()

    def action_sort_next(self) -> None:
        self.sort_column = SORT_KEYS[(SORT_KEYS.index(self.sort_column) + 1) % len(SORT_KEYS)]

    def action_sort_reverse(self) -> None:
        self.descending = not self.descending

    def action_toggle_stale(self) -> None:
        self.stale_only = not self.stale_only

    def action_toggle_xid(self) -> None:
        self.xid_only = not self.xid_only

    def action_filter(self) -> None:
        box = self.query_one("#fleet-filter", Input)
        box.add_class("shown")
        box.value = self.filter_text
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.input.remove_class("shown")
        self.query_one(FleetHostsTable).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#fleet-filter", Input)
        box.value = ""
        box.remove_class("shown")
        self.filter_text = ""
        self.query_one(FleetHostsTable).focus()

    def on_data_table_row_selected(self, event) -> None:
        if isinstance(event.data_table, FleetHostsTable):
            self.action_drill()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "close_help":
            return bool(self.screen.query(KeysPanel))
        return True

    def action_help(self) -> None:
        """`?`: the fleet view's keys, the drill-in's, and the ones that work everywhere."""
        if self.screen.query(KeysPanel):
            self.action_close_help()
        else:
            self.screen.mount(KeysPanel(fleet_key_groups(self)))

    def action_close_help(self) -> None:
        self.screen.query(KeysPanel).remove()

    def action_drill(self) -> None:
        host = self.query_one(FleetHostsTable).selected_host
        if host is not None:
            self.push_screen(HostGPUs(host))
