"""The Textual application: header with host chips, six numbered tabs, footer with keys."""
from __future__ import annotations

import asyncio
import contextlib
import importlib
import os

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.widgets import Input, Select, Static, TabbedContent

from console.runtime.fleet import Fleet
from console.runtime import events as ev
from console.safe_text import clean, clean_line, safe_text
from profiles import store
from widgets.host_chips import Chip, HostChips
from widgets.keys_panel import KeysPanel
from widgets.steady_footer import SteadyFooter

from .deck_screen import DeckScreen
from .deck_tabs import DeckTabPane, DeckTabs
from .host_switcher import HostSwitcher
from .keys_help import key_groups
from .orderly_exit import OrderlyExit
from .palette import KeysProvider
from .pane import Pane
from .quiet_heap import QuietHeap
from .tabs import TABS, tab_digit

FIRST_TAB = "gpus"  # on screen at start; the other tabs' panes are built after the first frame
TOAST_TIMEOUT_S = 5.0  # toasts go by themselves; what must stay is drawn in the panes



# whose summary leaves the tab strip first when it is wider than the screen: a crash mark on the
# Server tab stays longest
SUMMARY_GIVES_WAY = ("roofline", "tasks", "gpus", "campaign", "bench", "server")


def tab_label(tab_id: str, title: str, summary: str):
    return safe_text(f"{tab_digit(tab_id)} {title} {summary}".rstrip())


def tabs_width(labels) -> int:
    """The cells a strip of these labels takes: each tab pads its label by one cell a side."""
    return sum(label.cell_len + 2 for label in labels)


def _build_pane(tab_id: str, title: str, module: str, cls: str) -> Pane:
    pane = getattr(importlib.import_module(module), cls)(id=f"pane-{tab_id}")
    pane.TAB_TITLE = title
    return pane


class GpudeckApp(OrderlyExit, QuietHeap, App):
    TITLE = "gpudeck"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {KeysProvider}
    # One rule for digits: in a text field or drop-down they belong to the field; anywhere
    # else 1-6 switch tabs. The footer says which holds now ("1-6 tabs" or "Esc leave field").
    BINDINGS = [
        Binding("q", "quit", "quit"),
        # the keys panel is the top layer wherever the focus is: Esc closes it before anything else
        Binding("escape", "close_help", "close keys", priority=True),
        Binding("escape", "leave_field", "leave field, then 1-6 tabs"),
        Binding("1", "tab('gpus')", "tabs", key_display="1-6"),
        Binding("2", "tab('server')", "Server", show=False),
        Binding("3", "tab('bench')", "Bench", show=False),
        Binding("4", "tab('roofline')", "Roofline", show=False),
        Binding("5", "tab('tasks')", "Tasks", show=False),
        Binding("6", "tab('campaign')", "Campaign", show=False),
        Binding("H", "hosts", "hosts"),
        Binding("ctrl+r", "reconnect", "reconnect now"),
        Binding("question_mark", "help", "keys"),
    ]

    def __init__(self, profile_name: str = "local", readonly: bool = False, fleet: Fleet | None = None,
                 campaigns_end_on_quit: frozenset[str] | set[str] = frozenset()) -> None:
        super().__init__()
        # profiles whose campaigns end with this console (the demo's: its world is removed on quit),
        # so q asks first and the Campaign tab does not promise they keep running
        self.campaigns_end_on_quit = frozenset(campaigns_end_on_quit)
        self._asking_to_quit = False
        if "TEXTUAL_ANIMATIONS" not in os.environ:
            # No sliding tab underline or smooth scrolls: each animation frame redraws, and on a
            # loaded host those frames are a third of what a tab switch costs. TEXTUAL_ANIMATIONS
            # set by the operator still wins.
            self.animation_level = "none"
        self.readonly = readonly
        profiles, self.profile_errors = store.load_all()
        if fleet is None:
            fleet = Fleet(profiles, readonly=readonly)
        self.fleet = fleet
        self.current = profile_name if profile_name in fleet.profiles else "local"
        self.panes: dict[str, Pane] = {}    # a pane is listed once it is mounted
        self.started = asyncio.Event()      # every tab mounted and the current host opened
        self.summaries: dict[str, str] = {}
        self.chip_bar = HostChips(id="chips")
        self.tabs: TabbedContent | None = None
        # one host switch at a time, in the order chosen: two at once would leave tabs on either host
        self._switching = asyncio.Lock()

    def get_default_screen(self) -> DeckScreen:
        return DeckScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield self.chip_bar
        yield Static("", id="host-alert", markup=False)
        with DeckTabs(id="tabs", initial=FIRST_TAB) as self.tabs:
            for tab_id, title, module, cls in TABS:
                with DeckTabPane(f"{tab_digit(tab_id)} {title}", id=tab_id):
                    if tab_id == FIRST_TAB:  # the others are built after the first frame (on_mount)
                        pane = _build_pane(tab_id, title, module, cls)
                        self.panes[tab_id] = pane
                        yield pane
        yield SteadyFooter()

    async def on_mount(self) -> None:
        from textual.widgets import Tabs

        # digits switch tabs; a focused tab strip would only take the pane's keys away unseen
        self.tabs.query_one(Tabs).can_focus = False
        self.fleet.on_status(lambda name, status: self._refresh_chips())
        self._refresh_chips()
        self.set_interval(1.0, self._refresh_chips)
        self.run_worker(self.fleet.keep_alive(), name="keep-alive", group="fleet", exclusive=True)
        self.panes[FIRST_TAB].focus_body()  # its keys in the first frame's footer
        async with self._first_frame_out():
            # the tabs not on screen: their modules imported and their widgets mounted once the
            # operator sees the console, not before
            for tab_id, title, module, cls in TABS:
                if tab_id not in self.panes:
                    pane = _build_pane(tab_id, title, module, cls)
                    await self.tabs.get_pane(tab_id).mount(pane)
                    self.panes[tab_id] = pane
            for name in self.fleet.names():  # every host, on screen or not: crashes are caught everywhere
                self.fleet.runtime(name).subscribe(self._forward)
            await self.fleet.start_all()
            await self._open(self.current)
            self.settle_heap()  # what the tabs and hosts built leaves the collector's walk
            self.started.set()
        for line in self.profile_errors:
            self.notify(line, severity="error", timeout=15)

    @contextlib.asynccontextmanager
    async def _first_frame_out(self):
        """Draw the screen as it is now, then run the rest of the start with repaints flowing.

        Textual holds every repaint until the app's on_mount returns (a batch around mounting);
        the rest of the start (the other tabs, every host's runtime) takes a second or more, and
        the terminal would stay blank all that time. The batch is let go for the first frame and
        the start's remaining steps, and taken again before on_mount returns, as Textual expects.
        """
        held = getattr(self, "_batch_count", 0) > 0
        if held:
            self._end_batch()
        try:
            drawn = asyncio.Event()
            self.screen.call_after_refresh(drawn.set)
            await drawn.wait()
            yield
        finally:
            if held:
                self._begin_batch()

    async def on_unmount(self) -> None:
        await self.fleet.close()

    def _forward(self, event: ev.RuntimeEvent) -> None:
        """A runtime's event, to every pane as a message (each pane keeps its own host's)."""
        for pane in self.panes.values():
            pane.post_message(Pane.Runtime(event))
        if isinstance(event, (ev.CrashRecorded, ev.ServerStateChanged)):
            self._refresh_chips()
        elif isinstance(event, ev.StoreProblems):  # each unreadable record named once, one way
            for line in event.lines:
                self.notify(line, severity="warning", timeout=15)

    def chips(self) -> list[Chip]:
        out = []
        for name in self.fleet.names():
            status = self.fleet.hosts[name].status
            profile = self.fleet.profiles[name]
            runtime = self.fleet.runtimes.get(name)
            state, since = status.state, status.since
            if runtime is not None and runtime.down_since is not None and state != "connected":
                # down since the first failure: a retry in progress does not move it or hide it
                state, since = "down", runtime.down_since
            out.append(Chip(name=name, target=profile.target, state=state, since=since,
                            error=status.error, latency_ms=status.latency_ms,
                            simulated=profile.ui.simulated, current=name == self.current,
                            crashed=runtime.crashed_class() if runtime else None))
        return out

    def _refresh_chips(self) -> None:
        self.chip_bar.show(self.chips(), self.readonly)
        self._draw_host_alert()

    def host_alert(self) -> str | None:
        """The current host's refusal that no retry can fix (its host key changed or is not
        trusted), in the CLI's own words: the fingerprints and the `trust` command that fixes it."""
        host = self.fleet.hosts.get(self.current)
        error = host.status.error if host is not None else None
        if host is None or host.status.state == "connected" or not error or "host key" not in error:
            return None
        return error

    def _draw_host_alert(self) -> None:
        try:
            banner = self.query_one("#host-alert", Static)
        except NoMatches:
            return
        alert = self.host_alert()
        if alert is not None:
            banner.update(safe_text(f"✖ {self.current}: {alert}   ·   ctrl+r reconnect now", newlines=True))
        if banner.display != (alert is not None):
            banner.display = alert is not None
            self.refresh_bindings()

    async def _open(self, name: str) -> None:
        self.current = name
        # the header names the chosen host now, not once every tab has read it (the slowest,
        # the Roofline tab working out the model's ceiling, takes a fifth of a second or more)
        self._refresh_chips()
        self.sub_title = name
        await asyncio.to_thread(store.set_last_used, name)
        runtime = self.fleet.runtime(name)
        problem = await runtime.reread_profile()  # a [model] edited since the host was last open
        if problem:
            self.notify(problem, severity="warning", timeout=6)
        self.summaries.clear()
        for tab_id, pane in self.panes.items():
            self._set_tab_label(tab_id, "")
            await pane.set_session(runtime)
        self._refresh_chips()

    async def switch_host(self, name: str) -> None:
        await self.started.wait()   # a host chosen while the tabs are still being built opens after them
        async with self._switching:
            if name not in self.fleet.profiles and store.exists(name):  # added from the host switcher
                self.fleet.add(store.load(name))
                self._refresh_chips()
            if name in self.fleet.profiles and name != self.current:
                await self._open(name)
                self.notify(f"opened {name}", timeout=2)

    def _switch_in_background(self, name: str, then=None) -> None:
        """Switch hosts in a worker: awaited in a handler, the switch held every key (they queue
        behind it) until all six tabs had read the new host, a fifth of a second on the demo host."""
        async def switch() -> None:
            await self.switch_host(name)
            if then is not None:
                then()
        self.run_worker(switch(), group="switch-host")

    def on_gpus_pane_open_host(self, message) -> None:
        self._switch_in_background(message.name, then=lambda: self.action_tab("gpus"))

    def on_pane_summary(self, message: Pane.Summary) -> None:
        tab_id = (message.pane.id or "").removeprefix("pane-")
        self._set_tab_label(tab_id, message.text)

    def _set_tab_label(self, tab_id: str, summary: str) -> None:
        if self.summaries.get(tab_id) == summary:
            return  # a relabelled tab lays the whole strip out again: only when its words change
        self.summaries[tab_id] = summary
        self._label_tabs()

    def _label_tabs(self) -> None:
        """Each tab's digit, title and summary, as long as the strip fits the screen's width; wider,
        summaries give way one tab at a time, the least telling first (they come back once there is
        room). A strip wider than the screen was cut at its right, or scrolled to the open tab and
        started mid-word with its first tabs lost."""
        labels = {tab_id: tab_label(tab_id, title, self.summaries.get(tab_id, "")) for tab_id, title, *_ in TABS}
        titles = {tab_id: title for tab_id, title, *_ in TABS}
        for tab_id in SUMMARY_GIVES_WAY:
            if tabs_width(labels.values()) <= self.size.width:
                break
            labels[tab_id] = tab_label(tab_id, titles[tab_id], "")
        for tab_id, label in labels.items():
            try:
                tab = self.tabs.get_tab(tab_id)
            except NoMatches:  # a summary that arrives while the app is shutting down
                return
            if str(tab.label) != label.plain:
                tab.label = label

    def on_resize(self, event) -> None:
        if self.tabs is not None:
            self._label_tabs()
        for panel in self.screen.query_children(KeysPanel):
            panel.fit(event.size.height)

    def action_tab(self, tab_id: str) -> None:
        # The focus moves once the tab is drawn (on_tabbed_content_tab_activated), not before:
        # restyling the focused table and the footer first held the new tab's frame back.
        self.tabs.active = tab_id

    def _focus_in(self, pane: Pane) -> bool:
        focused = self.focused
        return focused is not None and (focused is pane or pane in focused.ancestors)

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = self.panes.get(event.pane.id or "")
        if pane is not None and not self._focus_in(pane):
            pane.focus_body()
        for panel in self.screen.query_children(KeysPanel):  # the panel follows the tab on screen
            panel.show(key_groups(self))

    def on_key(self, event) -> None:
        """--readonly removes the destructive keys; pressing one says so instead of doing nothing."""
        if not self.readonly or self._in_field() or self.tabs is None:
            return
        pane = self.panes.get(self.tabs.active)
        for binding in getattr(pane, "BINDINGS", []):
            if isinstance(binding, Binding) and event.key in binding.key.split(",") \
                    and binding.action.split("(")[0] in pane.DESTRUCTIVE_ACTIONS:
                self.notify(f"read-only console: '{binding.description}' is off (started with --readonly)",
                            severity="warning", timeout=3)
                return

    async def action_reconnect(self) -> None:
        """Try the current host now instead of waiting out the reconnect backoff."""
        host = self.fleet.hosts.get(self.current)
        if host is None:
            return
        retry = getattr(host, "retry_now", None)
        if retry is not None:
            retry()
        self.notify(f"reconnecting to {self.current} …", timeout=2)
        self.run_worker(self.fleet.ping(self.current), group="reconnect", exclusive=True)

    def action_hosts(self) -> None:
        def chosen(name: str | None) -> None:
            if name:
                self._switch_in_background(name)

        self.push_screen(HostSwitcher(self.chips(), self.profile_errors), chosen)

    def _help_shown(self) -> bool:
        # the panel is mounted on the screen itself: looking at its children, not the whole DOM,
        # keeps this cheap (it is asked for each key binding whenever the footer looks at them)
        return bool(self.screen.query_children(KeysPanel))

    def _in_field(self) -> bool:
        """Whether the focus is in a text field or a drop-down (digits and letters are typed there)."""
        focused = self.focused
        return focused is not None and (isinstance(focused, (Input, Select)) or isinstance(focused.parent, Select))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "tab":
            return not self._in_field()
        if action == "close_help":
            return self._help_shown()
        if action == "leave_field":
            return self._in_field() and not self._help_shown()
        if action == "reconnect":
            host = self.fleet.hosts.get(self.current)
            return host is not None and host.status.state != "connected" and not self.fleet.profiles[self.current].is_local
        return True

    async def action_help(self) -> None:
        """`?` opens the keys panel and closes it again."""
        if self._help_shown():
            await self.action_close_help()
        else:
            await self.screen.mount(KeysPanel(key_groups(self)))
            self.refresh_bindings()   # the footer offers Esc to close it now, not after the next focus move

    async def action_close_help(self) -> None:
        await self.screen.query_children(KeysPanel).remove()
        self.refresh_bindings()

    def action_leave_field(self) -> None:
        """Esc in a field hands the keys back to the tab (its table or log)."""
        pane = self.panes.get(self.tabs.active)
        if pane is not None:
            pane.focus_body()

    async def run_pane_action(self, tab_id: str, action: str) -> None:
        """Open a tab and run one of its actions, as its key would (the command palette uses this)."""
        await self.started.wait()
        self.action_tab(tab_id)
        pane = self.panes[tab_id]
        self.call_after_refresh(pane.run_action, action)

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False) -> None:
        """Every toast in the app (panes call this too) goes away within a few seconds and shows its
        text literally: messages carry config names, errors from hosts and task text, so they are
        never read as markup, whatever the caller asked, and control characters are removed."""
        timeout = TOAST_TIMEOUT_S if timeout is None else min(timeout, TOAST_TIMEOUT_S)
        super().notify(clean(message), title=clean_line(title), severity=severity, timeout=timeout, markup=False)
        # a toast that expires while a busy pane redraws can leave its cells on screen: repaint after it
        self.set_timer(timeout + 0.5, self._repaint_after_toast)

    def _repaint_after_toast(self) -> None:
        if self.screen_stack:  # a toast shown just before quitting: no screen is left to repaint
            self.screen.refresh(layout=True)

    async def action_quit(self) -> None:
        """q quits; where a running campaign ends with the console (the demo's), it asks first. With the
        keys panel open, q closes it, as Esc does: q and Esc close the top layer, q quits from a tab."""
        if self._asking_to_quit:
            return
        if self._help_shown():
            await self.action_close_help()
            return
        running = self._campaigns_ending_here()
        if not running:
            self.exit()
            return
        from .confirm import Confirm

        lines = [f"Campaign {state.id} is running on {state.profile}. Quitting the demo ends it: its driver is "
                 "killed and its servers are stopped, with the rest of the demo's world." for state in running]

        def answered(yes: bool | None) -> None:
            self._asking_to_quit = False
            if yes:
                self.exit()
        self._asking_to_quit = True
        self.push_screen(Confirm("Quit the demo?", lines, "Quit"), answered)

    def _campaigns_ending_here(self) -> list:
        """The running campaigns that quitting this console ends (none outside the demo)."""
        from console.campaign.owner import driver_alive

        found = []
        for name in sorted(self.campaigns_end_on_quit):
            runtime = self.fleet.runtimes.get(name)
            state = runtime.campaign if runtime is not None else None
            if state is not None and state.status == "running" and driver_alive(state):
                found.append(state)
        return found

    def action_help_quit(self) -> None:
        """ctrl+c does not quit; say which key does (plain text: toasts take no markup here)."""
        self.notify("press q to quit", title="Do you want to quit?")
