"""The Server tab: configs and their state, effective flags, the latest crash, the live log."""
from __future__ import annotations

import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, Input, Static

from console.fmt import clock, duration, middle_cut
from console.servers.backend import backend_for
from console.hosts import HostError
from console.runtime import events as ev
from console.safe_text import safe_text
from console.servers import configs as cfgs
from console.servers import lifecycle
from console.servers.launching import stop_line, where
from console.servers.unreached import why_unknown
from console.store.launches import LaunchRecord
from console.store.crashes import CrashRecord
from widgets.log_view import LogView
from widgets.safe_table import SafeDataTable

from .confirm import Confirm
from .pane import Pane
from .throttle import on_screen

STATE_BADGE = {
    "launching": ("◌ launching", "yellow"), "loading": ("◌ loading", "yellow"), "ready": ("● ready", "green"),
    "stopping": ("◌ stopping", "yellow"), "stopped": ("○ stopped", "grey50"), "crashed": ("✖ crashed", "bold red"),
    "unknown": ("? unknown", "yellow"),   # a live launch its host (or Slurm) has not answered about
}
# the tab title counts each config's newest launch by its mark, in this order
SUMMARY_MARKS = (("●", ("ready",)), ("◌", ("launching", "loading", "stopping")), ("✖", ("crashed",)))


def launch_lines(config: cfgs.ServerConfig, runtime) -> list[str]:
    argv = getattr(config.parsed, "argv", None)
    return lifecycle.launch_lines(config.script, runtime.name, argv if isinstance(argv, list) else None,
                                  backend_for(runtime.session.profile).how)


def config_summary(latest: list[LaunchRecord], configs: int) -> str:
    """`1 ● 1 ✖`: how many configs are ready, loading, crashed (a live hang counts as crashed)."""
    counts = {mark: 0 for mark, _ in SUMMARY_MARKS}
    for record in latest:
        state = record.shown_state
        for mark, states in SUMMARY_MARKS:
            if state in states:
                counts[mark] += 1
    text = " ".join(f"{n} {mark}" for mark, n in counts.items() if n)
    return text or str(configs)


def state_badge(record: LaunchRecord | None) -> tuple[str, str]:
    """A config's row mark, from the state its newest launch shows everywhere (LaunchRecord.shown_state)."""
    if record is None:
        return "– never run", "grey50"
    state = record.shown_state
    if state == "crashed" and record.live:  # judged dead by its log or silence, but the process runs on
        return "✖ crashed (running)", "bold red"
    return STATE_BADGE.get(state, (state, ""))


FLAG_COLUMNS = ("flag", "script", "effective (log)")
UNMANAGED_EVERY_S = 5.0  # how often rows for servers not started here are checked against the host, on screen


class ServerPane(Pane):
    TAB_TITLE = "Server"
    DESTRUCTIVE_ACTIONS = frozenset({"launch", "kill", "adopt"})
    BINDINGS = [
        Binding("l", "launch", "launch"),
        Binding("k", "kill", "kill"),
        Binding("d", "diff", "diff"),
        Binding("a", "adopt", "adopt"),
        Binding("e", "equivalent", "command"),  # the commands a launch of the selected config runs
        # the log's own keys are named in the log head line, so the footer fits 100 columns
        Binding("f", "follow", "follow", show=False),
        Binding("end", "follow_end", "follow", show=False),
        # log keys beyond the footer's room; the log head line names them
        Binding("number_sign", "numbers", "line #", show=False),
        Binding("y", "copy_line", "copy line", show=False),
        Binding("Y", "copy_excerpt", "copy crash", show=False),
        # one Esc closes the top layer: the search box, then the diff, then the log filter
        Binding("escape", "close_layer", "close"),
        Binding("slash", "search", "search", show=False),
        Binding("n", "next_match", "next", show=False),
        Binding("N", "prev_match", "prev", show=False),
        Binding("x", "filter", "filter", show=False),
        Binding("j", "jump", "jump to crash"),
        # the log takes the whole tab and back (tmux's prefix-z, k9s' and lazygit's full-screen view)
        Binding("z", "zoom", "zoom log", show=False),
        Binding("R", "reload", "reload", show=False),
        Binding("enter", "field_enter('search')", "find", priority=True),  # named while typing a search
    ]
    TYPING_ACTIONS = frozenset({"close_layer"})
    # The footer names the keys of the part that has the focus (`show_keys`); all work from both.
    # j is the log's (the crash panel names it too), so the list's footer fits 100 columns.
    LIST_FOOTER = frozenset({"launch", "kill", "diff", "adopt", "equivalent", "close_layer"})
    # x filter and the rest are named in the log head line: the log's footer fits 100 columns too
    LOG_FOOTER = frozenset({"follow", "search", "zoom", "jump", "close_layer"})
    KEY_GROUPS = {"follow": "Log", "follow_end": "Log", "numbers": "Log", "copy_line": "Log",
                  "copy_excerpt": "Log", "search": "Log", "next_match": "Log", "prev_match": "Log",
                  "filter": "Log", "jump": "Log", "zoom": "Log", "launch": "Configs", "kill": "Configs", "diff": "Configs",
                  "adopt": "Configs", "reload": "Configs", "equivalent": "Configs"}
    DEFAULT_CSS = """
    ServerPane #top { height: 14; }
    ServerPane #configs { width: 52; border-right: solid $panel-lighten-2; }
    ServerPane.narrow #configs { width: 38; }
    ServerPane #flags-box { width: 1fr; }
    ServerPane #promise { color: $warning; height: auto; }
    ServerPane #flags { height: 1fr; }
    ServerPane #metrics { height: auto; padding: 0 1; display: none; }
    ServerPane #metrics.shown { display: block; }
    ServerPane #crash { height: auto; background: $error 20%; padding: 0 1; display: none; }
    ServerPane #crash.shown { display: block; }
    ServerPane #loghead { height: 1; background: $panel; padding: 0 1; }
    ServerPane #search { display: none; }
    ServerPane #search.shown { display: block; }
    ServerPane.zoom #top, ServerPane.zoom #metrics.shown { display: none; }
    """

    RUNTIME_PARTS = {"gpus": False, "servers": True, "watch": True}

    last_crash: reactive[CrashRecord | None] = reactive(None, init=False)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.configs: list[cfgs.ServerConfig] = []
        self.latest: dict[str, LaunchRecord] = {}
        self.unmanaged: list = []
        self.selected: str | None = None
        self.shown_record: str | None = None
        self.search_text = ""
        self.search_mode = "search"
        self.since_column = None
        self.diff_index = -1
        self.diffing = False
        self.unreached = False  # the last load could not reach the host: configs from launch records

    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            yield SafeDataTable(id="configs", cursor_type="row", zebra_stripes=False)
            with Vertical(id="flags-box"):
                yield Static("", id="promise")
                yield SafeDataTable(id="flags", cursor_type="none")
        yield Static("", id="metrics")
        yield Static("", id="crash")
        yield Static("log  (select a config)", id="loghead")
        yield LogView(id="log")
        yield Input(placeholder="search the log (Enter: find, Esc: close)", id="search")

    # below this width the configs list gives up its "since" column (it scrolls) so the flags stay whole
    NARROW = 130

    _drawn_width = 0  # the list's width when its names were last cut to it

    def on_resize(self, event) -> None:
        narrow = event.size.width < self.NARROW
        changed = narrow != self.has_class("narrow")
        self.set_class(narrow, "narrow")
        self._config_columns(since=not narrow)
        if self.configs or self.unmanaged:
            self.call_after_refresh(self._refit_names)
        if changed and not self.diffing and self.is_mounted:
            self._draw_flags(self._selected_config())  # model paths shortened or whole again

    def _refit_names(self) -> None:
        """Once the list has its new width: the names cut to it again, if their room changed."""
        if self._drawn_width != self.query_one("#configs", DataTable).scrollable_content_region.width:
            self._draw_configs()

    def _config_columns(self, since: bool) -> None:
        """The configs table's columns; a narrow pane drops "since" whole rather than show a sliver of it."""
        table = self.query_one("#configs", DataTable)
        if table.columns and (self.since_column is not None) == since:
            return
        table.clear(columns=True)
        keys = table.add_columns("config", "state", *(["since"] if since else []))
        self.since_column = keys[2] if since else None
        if self.configs or self.unmanaged:
            self._draw_configs()

    def on_descendant_focus(self, event) -> None:
        self.show_keys(self.LOG_FOOTER if isinstance(event.widget, LogView) else self.LIST_FOOTER,
                       among=self.LIST_FOOTER | self.LOG_FOOTER)

    def on_mount(self) -> None:
        self._config_columns(since=True)
        self.set_interval(1.0, self._tick_since)
        self.set_interval(UNMANAGED_EVERY_S, self._recheck_unmanaged)
        flags = self.query_one("#flags", DataTable)
        flags.add_columns(*FLAG_COLUMNS)

    async def set_session(self, session) -> None:
        await super().set_session(session)
        self.selected = None
        self.shown_record = None
        self._draw_metrics()
        self.query_one(LogView).reset()
        self._load()

    # ------------------------------------------------------------ loading
    def action_reload(self) -> None:
        self._load(reread=True)

    @work(group="load", exclusive=True)
    async def _load(self, reread: bool = False) -> None:
        runtime = self.runtime
        if runtime is None:
            return
        if reread:  # `R`: the profile's file as it is now ([model] edited while the console ran)
            problem = await runtime.reread_profile()
            if problem:
                self.notify(problem, severity="warning", timeout=6)
        self.query_one("#loghead", Static).update(safe_text(f"loading configs from {runtime.name} …"))
        try:
            view = await runtime.server_view()
        except HostError as exc:
            self.query_one("#loghead", Static).update(safe_text(f"✖ {exc}", style="red"))
            self.set_summary("?")
            self.unreached = True
            return
        if runtime is not self.runtime:
            return
        self.configs = view.configs
        self.latest = view.latest
        self.unmanaged = view.unmanaged
        self.unreached = not view.reached  # reloaded when the host answers again
        self.last_crash = runtime.last_crash
        self._draw_configs()
        if self.configs and self.selected is None:
            self._select(self.configs[0].name)
        elif self.configs:  # a reload: put the log head back in place of "loading configs …"
            self._restore_loghead()
        elif not self.configs:
            self.query_one("#loghead", Static).update(safe_text(
                f"{runtime.name}: no launch configs — set [server] scripts_dir or configs in its profile"))

    def on_show(self) -> None:
        self._recheck_unmanaged()  # rows a hidden tab did not look at, brought up to date as it is shown

    @work(group="unmanaged", exclusive=True)
    async def _recheck_unmanaged(self) -> None:
        """Servers not started here come and go on their own: look again, redraw on a change.
        Only while the tab is on screen: each look lists the host's processes (a `ps`), and the
        rows are all it feeds (the tab's title counts gpudeck's own launches)."""
        runtime = self.runtime
        if runtime is None or not self.is_mounted or not runtime.reachable or not on_screen(self):
            return
        try:
            now = await runtime.unmanaged_now()
        except HostError:
            return
        if runtime is not self.runtime:
            return
        if [(p.pid, p.pgid) for p in now] != [(p.pid, p.pgid) for p in self.unmanaged]:
            self.unmanaged = now
            self._draw_configs()

    def _since(self, record: LaunchRecord, now: float) -> str:
        if record.shown_state == "unknown":  # it may have ended meanwhile: how long it runs is not known
            return duration(None)
        if record.live:
            return duration(now - record.started_at)
        return clock(record.stopped_at or record.started_at)

    def _tick_since(self) -> None:
        """The "since" column of running servers advances by itself (and an old /metrics reading turns stale)."""
        self._draw_metrics()
        table = self.query_one("#configs", DataTable)
        now = time.time()
        if self.since_column is None:
            return
        for config in self.configs:
            record = self.latest.get(config.name)
            if record is not None and record.live and config.name in table.rows:
                table.update_cell(config.name, self.since_column, self._since(record, now))

    def _name_room(self, rows: list[tuple[str, str, str]]) -> int:
        """The characters a config name has: the list's width less the state (and since) column,
        so the state stays on screen however long a campaign's grid names are (0: not laid out yet)."""
        inner = self.query_one("#configs", DataTable).scrollable_content_region.width
        if inner <= 0:
            return 0
        state = max((len(badge) for _, badge, _ in rows), default=0)
        since = max([7, *(len(s) for _, _, s in rows)]) if self.since_column is not None else -2  # room to tick
        return max(8, inner - state - since - 2 * 2 - 2 - 1)  # each column pads a cell a side; a scrollbar

    def _draw_configs(self) -> None:
        table = self.query_one("#configs", DataTable)
        table.clear()
        now = time.time()
        rows = []  # (name, state badge, since) as drawn, the state's style by its key
        for config in self.configs:
            record = self.latest.get(config.name)
            badge, style = state_badge(record)
            since = self._since(record, now) if record else ""
            rows.append((config.name + (" ⚠" if config.warnings else ""), badge, since))
        for proc in self.unmanaged:
            rows.append((f"pid {proc.pid} (not ours)", "● running", duration(proc.elapsed_s)))
        room = self._name_room(rows)
        self._drawn_width = table.scrollable_content_region.width
        if not room:  # not laid out yet: cut the names once the list has its width
            self.call_after_refresh(self._refit_names)
        for config in self.configs:
            record = self.latest.get(config.name)
            badge, style = state_badge(record)
            since = self._since(record, now) if record else ""
            warn = " ⚠" if config.warnings else ""
            name = middle_cut(config.name, room - len(warn)) if room else config.name
            table.add_row(name + warn, Text(badge, style=style), *self._since_cell(since), key=config.name)
        for proc in self.unmanaged:
            table.add_row(f"pid {proc.pid} (not ours)", Text("● running", style="yellow"),
                          *self._since_cell(duration(proc.elapsed_s)), key=f"pid:{proc.pid}")
        names = [c.name for c in self.configs]
        if self.selected in names:  # a redraw keeps the operator's place
            table.move_cursor(row=names.index(self.selected), animate=False)
        shown = {c.name for c in self.configs}
        self.set_summary(config_summary([r for name, r in self.latest.items() if name in shown], len(self.configs)))

    def _since_cell(self, text: str) -> tuple[str, ...]:
        return (text,) if self.since_column is not None else ()

    def watch_last_crash(self, crash: CrashRecord | None) -> None:
        from rich.text import Text

        banner = self.query_one("#crash", Static)
        if crash is None:
            banner.remove_class("shown")
            return
        sweep = f" · during {crash.sweep}" if crash.sweep else ""
        line = f" · line {crash.line}" if crash.line else ""
        status = f" · exit {crash.exit_status}" if crash.exit_status is not None else ""
        # a crash record holds log text and names from the host: literal, one line each
        banner.update(Text.assemble(
            safe_text(f"✖ crashed {crash.clock} · {crash.cls}{line}{status} · {crash.config}{sweep}", style="bold"),
            "\n  ", safe_text(crash.summary or ""), "        j jump",
            *[part for extra in crash.strength_lines() for part in ("\n  ", safe_text(extra))]))
        banner.add_class("shown")

    @on(DataTable.RowHighlighted, "#configs")
    def _row(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != event.data_table.cursor_row:
            return  # a stale event from before a redraw moved the cursor back
        key = event.row_key.value if event.row_key else None
        if key and not key.startswith("pid:"):
            self._select(key)

    def _select(self, name: str, force: bool = False, flags: bool = True) -> None:
        """Show config `name`: its flags (unless `flags` is False: a diff on screen stays), its
        launch's metrics and log."""
        if name == self.selected and not force:
            return
        self.selected = name
        self._pending_jump = None
        config = cfgs.find(self.configs, name)
        if flags:
            self._draw_flags(config)
        record = self.latest.get(name)
        log = self.query_one(LogView)
        log.reset()
        self.shown_record = record.id if record else None
        self._draw_metrics()
        if record is None:
            self.query_one("#loghead", Static).update(safe_text(f"log  {name}: never launched  ·  l launch"))
            return
        self._update_loghead()
        seen = self.runtime.seen_lines(record.id) if self.runtime else None
        if seen is not None:
            first, lines = seen
            log.reset(first_number=first)
            log.add_lines(lines)
        else:
            self._show_old_log(record)

    def _shown(self) -> LaunchRecord | None:
        """The launch whose log (and metrics) the tab shows."""
        return next((r for r in self.latest.values() if r.id == self.shown_record), None)

    def _update_loghead(self) -> None:
        record = self._shown()
        if record is None:
            return
        log = self.query_one(LogView)
        flt = f"   filter '{log.filter}'" if log.filter else ""  # named while one is set: the line keeps its keys
        self.query_one("#loghead", Static).update(Text.assemble(
            safe_text(f"log  {record.log or '(unknown path)'}   follow "), ("●", "green") if log.follow else "○",
            safe_text(f"{flt}   "),
            ("f/End follow · / search · x filter · # numbers · y/Y copy · z zoom", "dim")))

    def _restore_loghead(self) -> None:
        if self.shown_record is not None:
            self._update_loghead()
        elif self.selected:
            self.query_one("#loghead", Static).update(safe_text(f"log  {self.selected}: never launched  ·  l launch"))

    @work(group="oldlog", exclusive=True)
    async def _show_old_log(self, record: LaunchRecord) -> None:
        if not record.log or self.runtime is None:
            return
        try:
            first, lines = await self.runtime.read_log(record)
        except HostError as exc:
            self.notify(str(exc), severity="error")
            return
        if self.shown_record == record.id:
            self.query_one(LogView).reset(first_number=first)
            self.query_one(LogView).add_lines(lines)
            if self._pending_jump is not None:  # j was pressed while the log was being read
                self._jump(self._pending_jump)

    def _draw_flags(self, config: cfgs.ServerConfig | None) -> None:
        from widgets.server_flags import flag_rows

        table = self._flag_table(FLAG_COLUMNS)
        promise = self.query_one("#promise", Static)
        if config is None:
            promise.update("")
            return
        promise.update(safe_text("\n".join(f"⚠ {w}" for w in config.warnings)
                                 or (f"✖ {config.error}" if config.error else ""), newlines=True))
        for row in flag_rows(config.parsed, self._effective_flags(config.name), short=self.has_class("narrow")):
            table.add_row(*row)

    def _effective_flags(self, name: str) -> dict | None:
        return self.runtime.effective_flags(name) if self.runtime else None

    # ------------------------------------------------------------ runtime events
    def runtime_event(self, event: ev.RuntimeEvent) -> None:
        if isinstance(event, ev.ServerLogLines):
            if event.record_id == self.shown_record:
                self.query_one(LogView).add_lines(list(event.lines))
        elif isinstance(event, ev.ServerStateChanged):
            self._state_changed(event.record)
        elif isinstance(event, ev.ServerMetricsSampled):
            if event.record_id == self.shown_record:
                self._draw_metrics()
        elif isinstance(event, ev.HostConnection):
            if event.reachable and self.unreached:
                self._load()  # the configs themselves, now that the host answers
        elif isinstance(event, ev.CrashRecorded):
            self.last_crash = event.crash
            self.notify(f"✖ {event.crash.config} crashed: {event.crash.cls}", severity="error", timeout=15)

    def _draw_metrics(self) -> None:
        """The shown launch's own /metrics, as the runtime last polled them, under the reason its state
        is unknown when it is (host or Slurm not answering); hidden when there is neither."""
        from widgets.server_metrics import metrics_line

        line = self.query_one("#metrics", Static)
        runtime = self.runtime
        event = runtime.server_metrics.get(self.shown_record) if runtime and self.shown_record else None
        record = self._shown()
        why = why_unknown(record) if record is not None and record.shown_state == "unknown" else ""
        if event is None and not why:
            line.remove_class("shown")
            return
        parts = [safe_text(f"? unknown · {why}", style="yellow")] if why else []
        if event is not None:
            parts.append(metrics_line(event, time.time(), simulated=runtime.session.profile.ui.simulated))
        line.update(Text("\n").join(parts))
        line.add_class("shown")

    def _state_changed(self, record: LaunchRecord) -> None:
        before = self.latest.get(record.config)
        if before is not None and before.id != record.id and before.started_at > record.started_at:
            return  # an older launch of the config; the newest one is shown
        self.latest[record.config] = record
        if not any(c.name == record.config for c in self.configs):
            self.configs.append(cfgs.ServerConfig(name=record.config, script=record.script or record.command or ""))
        self._draw_configs()
        if record.config == self.selected:
            # the operator's diff (d) stays until Esc or d: Esc draws the flags as they are then
            if not self.diffing:
                self._draw_flags(self._selected_config())
            if self.shown_record != record.id:
                self._select(record.config, force=True, flags=not self.diffing)
            else:
                self._draw_metrics()  # the reason its state is unknown, or no longer
        if record.state == "ready" and (before is None or before.state != "ready" or before.id != record.id):
            self.notify(f"{record.config} ready in {record.time_to_ready_s}s", timeout=5)

    # ------------------------------------------------------------ actions
    def _selected_config(self) -> cfgs.ServerConfig | None:
        return cfgs.find(self.configs, self.selected) if self.selected else None

    def action_launch(self) -> None:
        config = self._selected_config()
        if config is None:
            self.notify("select a config first", severity="warning")
            return
        self._launch(config)

    @work(group="action")
    async def _launch(self, config: cfgs.ServerConfig) -> None:
        runtime = self.runtime
        try:
            warnings = await runtime.preflight(config.port)
            lines = [f"⚠ {w}" for w in config.warnings] + [f"⚠ {w.message}" for w in warnings]
            # every launch asks first, naming what will run: an `l` pressed by accident started a server
            title = f"Launch {config.name} anyway?" if lines else f"Launch {config.name}?"
            if not await self.app.push_screen_wait(Confirm(title, [*launch_lines(config, runtime), *lines],
                                                           "Launch")):
                return
            record = await runtime.launch(config)
        except (lifecycle.LaunchError, HostError, OSError) as exc:
            self.notify(f"✖ {exc}", severity="error")
            return
        if runtime is not self.runtime:
            return  # the operator switched host meanwhile; the runtime follows the launch anyway
        self.latest[config.name] = record
        self.selected = config.name
        self._draw_configs()
        self._select(config.name, force=True)
        self.query_one(LogView).follow_end()  # a new launch is watched live, whatever an earlier search left
        self._update_loghead()
        self.notify(f"launched {config.name} ({where(record)})")

    def action_equivalent(self) -> None:
        """What to type to launch the selected config by hand: the CLI line and the host command
        (the one its last launch ran, else the one a launch would run), copyable."""
        config = self._selected_config()
        if config is None or self.session is None:
            self.notify("select a config first", severity="warning")
            return
        from console.servers.equivalent import launch_equivalent

        from .equivalent import Equivalent

        argv = getattr(config.parsed, "argv", None)
        profile = self.session.profile
        self.app.push_screen(Equivalent(f"Launching {config.name} on {profile.name}, by hand",
                                        launch_equivalent(profile, config.name, config.script,
                                                          self.latest.get(config.name),
                                                          argv if isinstance(argv, list) else None),
                                        profile.name))

    def action_kill(self) -> None:
        record = self.latest.get(self.selected or "")
        if record is None or not record.live:
            self.notify("nothing running for this config", severity="warning")
            return
        self._kill(record)

    @work(group="action")
    async def _kill(self, record: LaunchRecord) -> None:
        runtime = self.runtime  # the host this kill is for, even if the operator switches meanwhile
        try:
            group = await runtime.group_of(record)
            lines = [f"pid {p.pid}  {p.command}" for p in group] or [f"process group {record.pgid}"]
            grace = runtime.session.profile.server.kill_grace_s
            lines.append(f"SIGTERM to the group, SIGKILL after {grace:g}s, then a GPU memory check.")
            if not await self.app.push_screen_wait(Confirm(f"Kill {record.config}?", lines, "Kill")):
                return
            result = await runtime.stop(record, progress=lambda t: self.notify(t, timeout=3))
        except (lifecycle.LaunchError, HostError) as exc:
            self.notify(f"✖ {exc}", severity="error")
            return
        self._draw_configs()
        if not result.clean:  # a process left the group (setsid in the script): say so, offer the kill
            left = result.leftovers()
            self.notify(f"⚠ {stop_line(record, result)}", severity="warning", timeout=30)
            if result.survivors and await self.app.push_screen_wait(
                    Confirm(f"Kill what is left of {record.config}?", left, "Kill")):
                try:
                    killed = await lifecycle.kill_escaped(runtime.session, record)
                except (lifecycle.LaunchError, HostError) as exc:
                    self.notify(f"✖ {exc}", severity="error")
                    return
                self.notify(f"SIGKILL sent to pid {' '.join(map(str, killed)) or '(none left)'}")
        else:
            self.notify(stop_line(record, result))
        if result.gpu_warning:
            self.notify(f"⚠ {result.gpu_warning}", severity="warning", timeout=20)

    def action_adopt(self) -> None:
        if not self.unmanaged:
            self.notify("no unmanaged inference servers on this host")
            return
        self._adopt(self.unmanaged[0])

    @work(group="action")
    async def _adopt(self, proc) -> None:
        runtime = self.runtime
        if not await self.app.push_screen_wait(Confirm(f"Adopt pid {proc.pid}?", [proc.command[:120]], "Adopt")):
            return
        try:
            record = await runtime.adopt(proc.pid)
        except (lifecycle.LaunchError, HostError) as exc:
            self.notify(f"✖ {exc}", severity="error")
            return
        if runtime is self.runtime:
            self.unmanaged = [p for p in self.unmanaged if p.pid != proc.pid]
            self._state_changed(record)

    def action_diff(self) -> None:
        from widgets.server_flags import diff_rows

        config = self._selected_config()
        others = [c for c in self.configs if config and c.name != config.name and c.parsed is not None]
        if config is None or config.parsed is None or not others:
            self.notify("need two parsed configs to diff", severity="warning")
            return
        # each press compares with the next config in the list
        self.diff_index = (self.diff_index + 1) % len(others)
        other = others[self.diff_index]
        table = self._flag_table(("flag", config.name, other.name))
        for row in diff_rows(config.parsed, other.parsed, short=self.has_class("narrow")):
            table.add_row(*row)
        self.diffing = True
        self.refresh_bindings()
        from console.servers.launch import diff

        same = "" if any(row.differs for row in diff(config.parsed, other.parsed)) else \
            "   no differences: every flag the same"
        self.query_one("#promise", Static).update(
            safe_text(f"diff: {config.name}  vs  {other.name}{same}   (d: next config · Esc: back)"))

    def _flag_table(self, columns: tuple[str, ...]) -> DataTable:
        """The flags table emptied, with these column headers (a diff names its two configs)."""
        table = self.query_one("#flags", DataTable)
        if tuple(str(c.label) for c in table.columns.values()) != tuple(columns):
            table.clear(columns=True)
            table.add_columns(*columns)
        else:
            table.clear()
        self.diffing = False
        return table

    def action_leave_diff(self) -> None:
        self.diff_index = -1
        self._draw_flags(self._selected_config())
        self.refresh_bindings()

    def action_follow(self) -> None:
        log = self.query_one(LogView)
        if log.follow:
            log.follow = False
        else:
            log.follow_end()
        self._update_loghead()

    def action_follow_end(self) -> None:
        self.query_one(LogView).follow_end()
        self._update_loghead()

    def on_log_view_follow_changed(self, message: LogView.FollowChanged) -> None:
        self._update_loghead()

    def action_numbers(self) -> None:
        shown = self.query_one(LogView).toggle_numbers()
        self.notify(f"line numbers {'on' if shown else 'off'}", timeout=2)

    def action_copy_line(self) -> None:
        found = self.query_one(LogView).current_line()
        if found is None:
            self.notify("no log line to copy", severity="warning")
            return
        self._copy(found[1], f"line {found[0]}")

    def action_copy_excerpt(self) -> None:
        crash = self.last_crash
        if crash is None or not crash.excerpt:
            self.notify("no crash excerpt to copy", severity="warning")
            return
        self._copy("\n".join(crash.excerpt) + "\n", f"crash excerpt of {crash.config}")

    def _copy(self, text: str, what: str) -> None:
        from .clipboard import copy_text

        copy_text(self.app, text, what, self.session.name if self.session else "local")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "close_layer":
            return self._top_layer() is not None
        return super().check_action(action, parameters)

    def _top_layer(self) -> str | None:
        """What Esc would close now, topmost first; None leaves Esc to the app."""
        if self.query_one("#search", Input).has_class("shown"):
            return "search box"
        if self.diffing:
            return "diff"
        if self.query_one(LogView).filter:
            return "filter"
        if self.has_class("zoom"):
            return "zoom"
        return None

    def action_zoom(self) -> None:
        """The log alone in the tab (the configs and flags hidden), or back; a following log stays at
        its end through the change of height (widgets/log_view.py)."""
        self.toggle_class("zoom")
        if self.has_class("zoom"):
            self.query_one(LogView).focus()  # the hidden list must not keep the keys
        self.notify("log zoomed: z again brings the configs back" if self.has_class("zoom") else "configs back",
                    timeout=2)

    def action_close_layer(self) -> None:
        layer = self._top_layer()
        if layer == "search box":
            self.action_close_search()
        elif layer == "diff":
            self.action_leave_diff()
        elif layer == "filter":
            self.action_filter()  # x again: the filter goes, the line in view stays
        elif layer == "zoom":
            self.action_zoom()
        self.refresh_bindings()

    def action_search(self) -> None:
        self.search_mode = "search"
        box = self.query_one("#search", Input)
        box.placeholder = "search the log (Enter: find · n/N next/prev · Esc: close)"
        box.add_class("shown")
        box.focus()

    def action_filter(self) -> None:
        log = self.query_one(LogView)
        if log.filter:
            log.set_filter(None)
            self._update_loghead()
            self.refresh_bindings()
            return
        self.search_mode = "filter"
        box = self.query_one("#search", Input)
        box.placeholder = "show only lines containing … (Enter: apply · x again: off)"
        box.add_class("shown")
        box.focus()

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        box = self.query_one("#search", Input)
        box.remove_class("shown")
        log = self.query_one(LogView)
        if self.search_mode == "filter":
            log.set_filter(event.value)
        else:
            self.search_text = event.value
            log.current = None  # a new search starts from the top of the view
            self._report_match(log.find(self.search_text))
        self._update_loghead()
        log.focus()

    def action_close_search(self) -> None:
        box = self.query_one("#search", Input)
        if box.has_class("shown"):
            box.remove_class("shown")
            self.query_one(LogView).focus()

    def action_next_match(self) -> None:
        self._report_match(self.query_one(LogView).find(self.search_text, forward=True))

    def action_prev_match(self) -> None:
        self._report_match(self.query_one(LogView).find(self.search_text, forward=False))

    def _report_match(self, found) -> None:
        if not self.search_text:
            self.notify("no search yet: / to search", severity="warning")
        elif found is None:
            self.notify(f"'{self.search_text}' not found", severity="warning")
        else:
            self.notify(found.describe(self.search_text), severity="warning" if found.wrapped else "information",
                        timeout=4)
        self._update_loghead()

    def action_jump(self) -> None:
        crash = self.last_crash
        if crash is None or not crash.line:
            self.notify("no crash line to jump to")
            return
        if crash.config and crash.config != self.selected and crash.config in self.latest:
            self._select(crash.config)
            self._draw_configs()
        log = self.query_one(LogView)
        if not log.lines:  # the log is still being read: the jump happens when it arrives
            self._pending_jump = int(crash.line)
            return
        self._jump(int(crash.line))

    _pending_jump: int | None = None

    def _jump(self, number: int) -> None:
        self._pending_jump = None
        log = self.query_one(LogView)
        log.mark_decisive(number)
        if not log.jump_to_number(number):
            self.notify(f"line {number} is outside the loaded window", severity="warning")
        self._update_loghead()
