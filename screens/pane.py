"""The contract every tab body follows.

A pane is built once; the app hands it the current host's `HostRuntime` on
mount and on every host switch (`set_session`). The runtime owns the work
that outlives a screen (sampler, monitors, sweep, store watcher); the app
forwards the runtime's events to every pane as `Pane.Runtime` messages and a
pane reacts in `runtime_event`, ignoring other hosts' events. A pane reports
a short live summary for its tab title with `self.set_summary("✖ crashed")`.

While its host is unreachable every pane shows a stale line with the time of
the last good reading (the base class does it, from HostConnection events).
"""
from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from console.fmt import clock
from console.runtime import events as ev
from console.runtime.host_runtime import HostRuntime
from console.session import HostSession
from console.safe_text import clean, clean_line


class StaleLine(Static):
    DEFAULT_CSS = "StaleLine { height: auto; padding: 0 1; background: $warning 30%; display: none; }"


class Pane(Vertical):
    """Base class of every tab body (the six of screens/tabs.py)."""

    BLANK = True  # a container: only its background shows between its widgets (screens/deck_tabs.py)
    TAB_TITLE = "?"
    # first in every tab's footer, so the way to every other key is never cut off a narrow footer
    BINDINGS = [Binding("question_mark", "app.help", "keys")]
    # Actions removed (not just greyed) from this pane when the console is --readonly.
    DESTRUCTIVE_ACTIONS: frozenset[str] = frozenset()
    # The pane's actions that apply while the operator types in one of its fields (Esc, Enter,
    # ctrl+u): the footer names these alone then, not the pane's keys that the field takes as text.
    TYPING_ACTIONS: frozenset[str] = frozenset()
    # What a pane given a bare HostSession (a test app, no fleet) starts in its private runtime.
    RUNTIME_PARTS: dict[str, bool] = {"gpus": False, "servers": False, "watch": True}

    stale: reactive[ev.HostConnection | None] = reactive(None, init=False)

    class Summary(Message):
        def __init__(self, pane: "Pane", text: str) -> None:
            self.pane = pane
            self.text = text
            super().__init__()

    class Runtime(Message):
        """A runtime event, forwarded by the app (or by a private runtime) to the pane."""

        def __init__(self, event: ev.RuntimeEvent) -> None:
            self.event = event
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.runtime: HostRuntime | None = None
        self._private: HostRuntime | None = None     # made for a bare session; closed with the pane
        self._unsubscribe = None

    # ------------------------------------------------------------ the host
    @property
    def session(self) -> HostSession | None:
        return self.runtime.session if self.runtime else None

    @session.setter
    def session(self, session: HostSession | None) -> None:
        self.runtime = HostRuntime(session) if session is not None else None

    async def set_session(self, target: HostRuntime | HostSession) -> None:
        """Switch to another host; override and call super() first.

        The app passes the profile's runtime. A bare HostSession (a test app that
        holds one pane) gets a private runtime that this pane starts and closes.
        """
        if isinstance(target, HostRuntime):
            self.runtime = target
        else:
            await self._close_private()
            self._private = HostRuntime(target)
            self._unsubscribe = self._private.subscribe(lambda e: self.post_message(self.Runtime(e)))
            await self._private.start(**self.RUNTIME_PARTS)
            self.runtime = self._private
        self.stale = None if self.runtime.reachable else self._connection_now()

    def _connection_now(self) -> ev.HostConnection:
        rt = self.runtime
        status = rt.session.host.status
        return ev.HostConnection(rt.name, status.state, rt.reachable, rt.down_since or status.since,
                                 rt.last_good, status.error)

    async def _close_private(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._private is not None:
            private, self._private = self._private, None
            await private.close()

    async def on_unmount(self) -> None:
        await self._close_private()

    def on_pane_runtime(self, message: "Pane.Runtime") -> None:
        event = message.event
        self.all_hosts_event(event)
        if self.runtime is None or event.profile != self.runtime.name:
            return
        if isinstance(event, ev.HostConnection):
            self.stale = None if event.reachable else event
        elif isinstance(event, ev.StoreProblems) and self._private is not None:
            for line in event.lines:  # a pane on its own names them (in the app, the app does)
                self.notify(line, severity="warning", timeout=15)
        self.runtime_event(event)

    def runtime_event(self, event: ev.RuntimeEvent) -> None:
        """React to one event of the host on screen; override."""

    def all_hosts_event(self, event: ev.RuntimeEvent) -> None:
        """React to an event of any host (a fleet view); override."""

    # ------------------------------------------------------------ staleness (13.3)
    def watch_stale(self, connection: ev.HostConnection | None) -> None:
        try:
            line = self.query_one(StaleLine)
        except Exception:  # noqa: BLE001 - not composed yet
            line = StaleLine()
            self.mount(line, before=0)
        if connection is None:
            line.display = False
            return
        line.update(Text(f"⚠ STALE: {connection.profile} unreachable since {clock(connection.since)}; "
                         f"showing the last good reading, from {clock(connection.last_good)}", style="bold"))
        line.display = True

    # ------------------------------------------------------------ the rest
    def focus_body(self) -> None:
        """Give the focus to the pane's first focusable widget, so its keys work at once."""
        from textual.widgets import Button, Input, Select

        # a table or log, not a field (digits must still switch tabs) nor a button (Enter would press it)
        for widget in self.query("*"):
            if widget.focusable and widget.display and not isinstance(widget, (Input, Select, Button)):
                widget.focus()
                return

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = True) -> None:
        """A toast with literal text (config names, host errors, task text): never markup, no control bytes."""
        self.app.notify(clean(message), title=clean_line(title), severity=severity, timeout=timeout, markup=False)

    def set_summary(self, text: str) -> None:
        self.post_message(self.Summary(self, text))

    @property
    def readonly(self) -> bool:
        return bool(self.session and self.session.readonly)

    def typing(self) -> bool:
        """Whether the focus is in one of this pane's text fields (its keys are typed there)."""
        from textual.widgets import Input

        focused = self.app.focused
        return isinstance(focused, Input) and self in focused.ancestors

    def show_keys(self, actions: frozenset[str], among: frozenset[str]) -> None:
        """Name in the footer the pane's keys for `actions` and not the rest of `among` (those still
        work, and `?` lists them all): a pane whose parts take different keys says the focused one's."""
        changed = False
        for key, bindings in self._bindings.key_to_bindings.items():
            now = [b if (name := b.action.split("(")[0]) not in among or b.show == (name in actions)
                   else replace(b, show=not b.show) for b in bindings]
            if now != bindings:
                self._bindings.key_to_bindings[key] = now
                changed = True
        if changed:
            self.refresh_bindings()

    def set_key_words(self, action: str, words: str) -> None:
        """The footer's words for the pane's key of `action` (a key whose words say its state)."""
        for key, bindings in self._bindings.key_to_bindings.items():
            self._bindings.key_to_bindings[key] = [replace(b, description=words) if b.action == action else b
                                                   for b in bindings]
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.DESTRUCTIVE_ACTIONS and self.readonly:
            return False
        if action not in self.TYPING_ACTIONS and action != "field_enter" and self.typing():
            return False  # the field takes the key as text (`+` in a task); the footer names the field's keys
        if action == "field_enter":
            focused = self.app.focused
            return self.typing() and focused is not None and focused.id in parameters
        return True

    async def action_field_enter(self, field_id: str) -> None:
        """Enter in a field does what the field's own Enter does; bound on the pane so that the
        footer names it while typing (`Enter save`)."""
        from textual.widgets import Input

        await self.query_one(f"#{field_id}", Input).action_submit()
