"""The Server tab: configs and their state, effective flags, the latest crash, the live log."""
from __future__ import annotations

import asyncio
import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from console.fmt import duration
from console.hosts import HostError
from console.servers import configs as cfgs
from console.servers import crashes, lifecycle, records
from console.servers.monitor import ServerMonitor
from console.servers.records import LaunchRecord
from console.session import HostSession
from widgets.log_view import LogView

from .confirm import Confirm
from .pane import Pane

STATE_BADGE = {
    "launching": ("◌ launching", "yellow"), "loading": ("◌ loading", "yellow"), "ready": ("● ready", "green"),
    "stopping": ("◌ stopping", "yellow"), "stopped": ("○ stopped", "grey50"), "crashed": ("✖ crashed", "bold red"),
}


FLAG_COLUMNS = ("flag", "script", "effective (log)")


class ServerPane(Pane):
    TAB_TITLE = "Server"
    DESTRUCTIVE_ACTIONS = frozenset({"launch", "kill", "adopt"})
    BINDINGS = [
        Binding("l", "launch", "launch"),
        Binding("k", "kill", "kill"),
        Binding("d", "diff", "diff"),
        Binding("a", "adopt", "adopt"),
        Binding("f", "follow", "follow"),
        Binding("end", "follow_end", "follow", show=False),
        # log keys beyond the footer's room; the log head line names them
        Binding("number_sign", "numbers", "line #", show=False),
        Binding("y", "copy_line", "copy line", show=False),
        Binding("Y", "copy_excerpt", "copy crash", show=False),
        Binding("escape", "leave_diff", "leave diff"),
        Binding("slash", "search", "search"),
        Binding("n", "next_match", "next", show=False),
        Binding("N", "prev_match", "prev", show=False),
        Binding("x", "filter", "filter"),
        Binding("j", "jump", "jump to crash"),
        Binding("R", "reload", "reload"),
    ]
    DEFAULT_CSS = """
    ServerPane #top { height: 14; }
    ServerPane #configs { width: 52; border-right: solid $panel-lighten-2; }
    ServerPane.narrow #configs { width: 38; }
    ServerPane #flags-box { width: 1fr; }
    ServerPane #promise { color: $warning; height: auto; }
    ServerPane #flags { height: 1fr; }
    ServerPane #crash { height: auto; background: $error 20%; padding: 0 1; display: none; }
    ServerPane #crash.shown { display: block; }
    ServerPane #loghead { height: 1; background: $panel; padding: 0 1; }
    ServerPane #search { display: none; }
    ServerPane #search.shown { display: block; }
    """

    class LogLines(Message):
        def __init__(self, record_id: str, lines: list[str]) -> None:
            self.record_id, self.lines = record_id, lines
            super().__init__()

    class StateChanged(Message):
        def __init__(self, record: LaunchRecord) -> None:
            self.record = record
            super().__init__()

    class Crashed(Message):
        def __init__(self, doc: dict) -> None:
            self.doc = doc
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.configs: list[cfgs.LaunchConfig] = []
        self.latest: dict[str, LaunchRecord] = {}
        self.unmanaged: list = []
        self.selected: str | None = None
        self.shown_record: str | None = None
        self.monitors: dict[str, ServerMonitor] = {}
        self.last_crash: dict | None = None
        self.search_text = ""
        self.search_mode = "search"
        self.diffing = False

    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            yield DataTable(id="configs", cursor_type="row", zebra_stripes=False)
            with Vertical(id="flags-box"):
                yield Static("", id="promise")
                yield DataTable(id="flags", cursor_type="none")
        yield Static("", id="crash")
        yield Static("log  (select a config)", id="loghead")
        yield LogView(id="log")
        yield Input(placeholder="search the log (Enter: find, Esc: close)", id="search")

    # below this width the configs list gives up its "since" column (it scrolls) so the flags stay whole
    NARROW = 130

    def on_resize(self, event) -> None:
        self.set_class(event.size.width < self.NARROW, "narrow")

    def on_mount(self) -> None:
        table = self.query_one("#configs", DataTable)
        table.add_columns("config", "state", "since")
        flags = self.query_one("#flags", DataTable)
        flags.add_columns(*FLAG_COLUMNS)

    async def set_session(self, session: HostSession) -> None:
        await super().set_session(session)
        self.workers.cancel_group(self, "monitors")
        self.monitors.clear()
        self.selected = None
        self.shown_record = None
        self.query_one(LogView).reset()
        self.action_reload()

    # ------------------------------------------------------------ loading
    def action_reload(self) -> None:
        self._load()

    @work(group="load", exclusive=True)
    async def _load(self) -> None:
        session = self.session
        if session is None:
            return
        self.query_one("#loghead", Static).update(f"loading configs from {session.name} …")
        try:
            await lifecycle.reattach(session)
            self.configs = await cfgs.discover(session)
            from console.servers.procs import inference_processes

            running = await inference_processes(session.host)
            if session.profile.ui.simulated:  # a simulated host lists only its simulators
                from console.bench.endpoint import loopback_port
                from console.demo import simulated_process

                port = loopback_port(session.profile.server.url or "")
                running = [p for p in running if simulated_process(p.command, port)]
        except HostError as exc:
            self.query_one("#loghead", Static).update(f"[red]✖ {exc}[/red]")
            self.set_summary("?")
            return
        if session is not self.session:
            return
        found, unreadable = records.scan(session.name)
        self.latest = records.latest_per_config(session.name, found)
        for line in unreadable:
            self.notify(line, severity="warning", timeout=15)
        managed = {r.pgid for r in found if r.live}
        self.unmanaged = [p for p in running if p.pgid not in managed]
        found = crashes.load_all(session.name)
        self.last_crash = found[0] if found else None
        self._draw_configs()
        self._draw_crash()
        for record in self.latest.values():
            if record.live:
                self._watch(record)
        if self.configs and self.selected is None:
            self._select(self.configs[0].name)
        elif self.configs:  # a reload: put the log head back in place of "loading configs …"
            self._restore_loghead()
        elif not self.configs:
            self.query_one("#loghead", Static).update(
                f"{session.name}: no launch configs — set [server] scripts_dir or configs in its profile")

    def _draw_configs(self) -> None:
        table = self.query_one("#configs", DataTable)
        table.clear()
        now = time.time()
        for config in self.configs:
            record = self.latest.get(config.name)
            badge, style = STATE_BADGE.get(record.state, (record.state, "")) if record else ("– never run", "grey50")
            since = ""
            if record:
                since = duration(now - record.started_at) if record.live else time.strftime(
                    "%H:%M", time.localtime(record.stopped_at or record.started_at))
            warn = " ⚠" if config.warnings else ""
            table.add_row(config.name + warn, f"[{style}]{badge}[/]", since, key=config.name)
        for proc in self.unmanaged:
            table.add_row(f"pid {proc.pid} (not ours)", "[yellow]● running[/]", duration(proc.elapsed_s),
                          key=f"pid:{proc.pid}")
        names = [c.name for c in self.configs]
        if self.selected in names:  # a redraw keeps the operator's place
            table.move_cursor(row=names.index(self.selected), animate=False)
        states = [r.state for r in self.latest.values()]
        stuck = [r.crash_class for r in self.latest.values() if r.live and r.crash_class]
        if stuck:
            self.set_summary(f"✖ {stuck[0]}")
        elif "crashed" in states:
            self.set_summary("✖ crashed")
        elif "ready" in states:
            self.set_summary("● ready")
        elif any(s in ("loading", "launching") for s in states):
            self.set_summary("◌ loading")
        else:
            self.set_summary(f"{len(self.configs)}")

    def _draw_crash(self) -> None:
        banner = self.query_one("#crash", Static)
        doc = self.last_crash
        if not doc:
            banner.remove_class("shown")
            return
        sweep = f" · during {doc['sweep']}" if doc.get("sweep") else ""
        line = f" · line {doc['line']}" if doc.get("line") else ""
        status = f" · exit {doc['exit_status']}" if doc.get("exit_status") is not None else ""
        banner.update(f"[b]✖ crashed {doc.get('time', '')[11:19]} · {doc.get('class')}{line}{status} · "
                      f"{doc.get('config')}{sweep}[/b]\n  {doc.get('summary', '')}        j jump")
        banner.add_class("shown")

    @on(DataTable.RowHighlighted, "#configs")
    def _row(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != event.data_table.cursor_row:
            return  # a stale event from before a redraw moved the cursor back
        key = event.row_key.value if event.row_key else None
        if key and not key.startswith("pid:"):
            self._select(key)

    def _select(self, name: str, force: bool = False) -> None:
        if name == self.selected and not force:
            return
        self.selected = name
        config = cfgs.find(self.configs, name)
        self._draw_flags(config)
        record = self.latest.get(name)
        log = self.query_one(LogView)
        log.reset()
        self.shown_record = record.id if record else None
        if record is None:
            self.query_one("#loghead", Static).update(f"log  {name}: never launched  ·  l launch")
            return
        self._update_loghead()
        if record.id in self.monitors:
            monitor = self.monitors[record.id]
            log.add_lines(list(monitor.seen))
        else:
            self._show_old_log(record)

    def _update_loghead(self) -> None:
        record = next((r for r in self.latest.values() if r.id == self.shown_record), None)
        if record is None:
            return
        log = self.query_one(LogView)
        flt = f"'{log.filter}'" if log.filter else "off"
        self.query_one("#loghead", Static).update(Text.assemble(
            f"log  {record.log or '(unknown path)'}   follow ", ("●", "green") if log.follow else "○",
            f"   filter {flt}   ", ("f/End follow · # numbers · y line · Y crash copy", "dim")))

    def _restore_loghead(self) -> None:
        if self.shown_record is not None:
            self._update_loghead()
        elif self.selected:
            self.query_one("#loghead", Static).update(f"log  {self.selected}: never launched  ·  l launch")

    @work(group="oldlog", exclusive=True)
    async def _show_old_log(self, record: LaunchRecord) -> None:
        if not record.log or self.session is None:
            return
        try:
            result = await self.session.host.run(["tail", "-n", "5000", record.log], timeout=30)
            count = await self._line_count(record.log)
        except HostError as exc:
            self.notify(str(exc), severity="error")
            return
        if self.shown_record == record.id:
            lines = result.stdout.splitlines()
            self.query_one(LogView).reset(first_number=max(1, (count or len(lines)) - len(lines) + 1))
            self.query_one(LogView).add_lines(lines)

    async def _line_count(self, path: str) -> int | None:
        result = await self.session.host.run(["wc", "-l", path], timeout=30)
        head = result.stdout.split()
        return int(head[0]) if head and head[0].isdigit() else None

    def _draw_flags(self, config: cfgs.LaunchConfig | None) -> None:
        from widgets.server_flags import flag_rows

        table = self._flag_table(FLAG_COLUMNS)
        promise = self.query_one("#promise", Static)
        if config is None:
            promise.update("")
            return
        promise.update("\n".join(f"⚠ {w}" for w in config.warnings) or (f"✖ {config.error}" if config.error else ""))
        for row in flag_rows(config.parsed, self._effective_flags(config.name)):
            table.add_row(*row)

    def _effective_flags(self, name: str) -> dict | None:
        record = self.latest.get(name)
        monitor = self.monitors.get(record.id) if record else None
        return monitor.effective if monitor is not None else None

    # ------------------------------------------------------------ monitors
    def _watch(self, record: LaunchRecord) -> None:
        if record.id in self.monitors or self.session is None:
            return
        monitor = ServerMonitor(
            self.session, record,
            on_lines=lambda lines, rid=record.id: self.post_message(self.LogLines(rid, lines)),
            on_state=lambda rec: self.post_message(self.StateChanged(rec)),
            on_crash=lambda doc: self.post_message(self.Crashed(doc)))
        self.monitors[record.id] = monitor
        self.run_worker(monitor.run(), group="monitors", name=f"monitor-{record.id}")

    def on_server_pane_log_lines(self, message: LogLines) -> None:
        if message.record_id == self.shown_record:
            self.query_one(LogView).add_lines(message.lines)

    def on_server_pane_state_changed(self, message: StateChanged) -> None:
        self.latest[message.record.config] = message.record
        self._draw_configs()
        if message.record.config == self.selected:
            self._draw_flags(self._selected_config())
        if message.record.state == "ready":
            self.notify(f"{message.record.config} ready in {message.record.time_to_ready_s}s", timeout=5)

    def on_server_pane_crashed(self, message: Crashed) -> None:
        self.last_crash = message.doc
        self._draw_crash()
        if not self.readonly and self.session is not None:
            from profiles.atomic import StateFileError
            from profiles.tasks import BoardReadOnly, suggest_from_crash

            async def offer(name: str, doc: dict) -> None:
                try:  # offered on the Tasks tab, never added silently; the board locks a file
                    await asyncio.to_thread(suggest_from_crash, name, doc, record=doc.get("id"))
                except (BoardReadOnly, StateFileError):
                    pass

            self.run_worker(offer(self.session.name, message.doc), group="suggest")
        self.notify(f"✖ {message.doc['config']} crashed: {message.doc['class']}", severity="error", timeout=15)

    # ------------------------------------------------------------ actions
    def _selected_config(self) -> cfgs.LaunchConfig | None:
        return cfgs.find(self.configs, self.selected) if self.selected else None

    def action_launch(self) -> None:
        config = self._selected_config()
        if config is None:
            self.notify("select a config first", severity="warning")
            return
        self._launch(config)

    @work(group="action")
    async def _launch(self, config: cfgs.LaunchConfig) -> None:
        session = self.session
        try:
            warnings = await lifecycle.preflight(session, config.port)
            lines = [f"⚠ {w}" for w in config.warnings] + [f"⚠ {w.message}" for w in warnings]
            if lines:
                ok = await self.app.push_screen_wait(Confirm(f"Launch {config.name} anyway?", lines, "Launch"))
                if not ok:
                    return
            record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        except (lifecycle.LaunchError, HostError, OSError) as exc:
            self.notify(f"✖ {exc}", severity="error")
            return
        self.latest[config.name] = record
        self.selected = config.name
        self._watch(record)
        self._draw_configs()
        self._select(config.name, force=True)
        self.query_one(LogView).follow_end()  # a new launch is watched live, whatever an earlier search left
        self._update_loghead()
        self.notify(f"launched {config.name} (pgid {record.pgid})")

    def action_kill(self) -> None:
        record = self.latest.get(self.selected or "")
        if record is None or not record.live:
            self.notify("nothing running for this config", severity="warning")
            return
        self._kill(record)

    @work(group="action")
    async def _kill(self, record: LaunchRecord) -> None:
        from console.servers.procs import processes

        try:
            group = [p for p in await processes(self.session.host) if p.pgid == record.pgid]
            lines = [f"pid {p.pid}  {p.command}" for p in group] or [f"process group {record.pgid}"]
            grace = self.session.profile.server.kill_grace_s
            lines.append(f"SIGTERM to the group, SIGKILL after {grace:g}s, then a GPU memory check.")
            if not await self.app.push_screen_wait(Confirm(f"Kill {record.config}?", lines, "Kill")):
                return
            result = await lifecycle.stop(self.session, record, progress=lambda t: self.notify(t, timeout=3))
        except (lifecycle.LaunchError, HostError) as exc:
            self.notify(f"✖ {exc}", severity="error")
            return
        self._draw_configs()
        self.notify(f"stopped {record.config} ({result.signal}, {result.seconds}s)")
        if result.gpu_warning:
            self.notify(f"⚠ {result.gpu_warning}", severity="warning", timeout=20)

    def action_adopt(self) -> None:
        if not self.unmanaged:
            self.notify("no unmanaged inference servers on this host")
            return
        self._adopt(self.unmanaged[0])

    @work(group="action")
    async def _adopt(self, proc) -> None:
        if not await self.app.push_screen_wait(Confirm(f"Adopt pid {proc.pid}?", [proc.command[:120]], "Adopt")):
            return
        try:
            record = await lifecycle.adopt(self.session, proc.pid)
        except (lifecycle.LaunchError, HostError) as exc:
            self.notify(f"✖ {exc}", severity="error")
            return
        self.latest[record.config] = record
        self.unmanaged = [p for p in self.unmanaged if p.pid != proc.pid]
        self.configs.append(cfgs.LaunchConfig(name=record.config, script=record.command or ""))
        self._watch(record)
        self._draw_configs()

    def action_diff(self) -> None:
        from widgets.server_flags import diff_rows

        config = self._selected_config()
        others = [c for c in self.configs if config and c.name != config.name and c.parsed is not None]
        if config is None or config.parsed is None or not others:
            self.notify("need two parsed configs to diff", severity="warning")
            return
        # each press compares with the next config in the list
        self._diff_index = (getattr(self, "_diff_index", -1) + 1) % len(others)
        other = others[self._diff_index]
        table = self._flag_table(("flag", config.name, other.name))
        for row in diff_rows(config.parsed, other.parsed):
            table.add_row(*row)
        self.diffing = True
        self.refresh_bindings()
        self.query_one("#promise", Static).update(
            Text(f"diff: {config.name}  vs  {other.name}   (d: next config · Esc: back)"))

    def _flag_table(self, columns: tuple[str, ...]) -> DataTable:
        """The flags table emptied, with these column headers (a diff names its two configs)."""
        table = self.query_one("#flags", DataTable)
        if tuple(str(c.label) for c in table.columns.values()) != columns:
            table.clear(columns=True)
            table.add_columns(*columns)
        else:
            table.clear()
        self.diffing = False
        return table

    def action_leave_diff(self) -> None:
        self._diff_index = -1
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
        doc = self.last_crash
        if not doc or not doc.get("excerpt"):
            self.notify("no crash excerpt to copy", severity="warning")
            return
        self._copy("\n".join(doc["excerpt"]) + "\n", f"crash excerpt of {doc.get('config')}")

    def _copy(self, text: str, what: str) -> None:
        from .clipboard import copy_text

        copy_text(self.app, text, what, self.session.name if self.session else "local")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "leave_diff" and not self.diffing:
            return False
        return super().check_action(action, parameters)

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

    def on_key(self, event) -> None:
        box = self.query_one("#search", Input)
        if event.key == "escape" and box.has_class("shown"):
            box.remove_class("shown")
            self.query_one(LogView).focus()
            event.stop()

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
        doc = self.last_crash
        if not doc or not doc.get("line"):
            self.notify("no crash line to jump to")
            return
        record = records.get(self.session.name, doc.get("launch"))
        if record and record.config != self.selected:
            self._select(record.config)
            self._draw_configs()
        log = self.query_one(LogView)
        log.mark_decisive(int(doc["line"]))
        if not log.jump_to_number(int(doc["line"])):
            self.notify(f"line {doc['line']} is outside the loaded window", severity="warning")
        self._update_loghead()
