"""What the console redraws, and when: the first frame before the slow start, a footer rebuilt only
when its keys change, live updates coalesced and held back while their tab is hidden."""
from __future__ import annotations


from textual.app import App, ComposeResult
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from screens.app import GpudeckApp
from screens.throttle import Throttle
from tests.harness import wait_until


async def test_first_frame_is_drawn_before_the_hosts_start(demo_world):
    app = GpudeckApp(profile_name="demo")
    frames: list[object] = []
    seen_at_start: list[tuple[int, list[str]]] = []
    display = app._display

    def counted(screen, renderable):
        frames.append(renderable)
        return display(screen, renderable)

    app._display = counted
    start_all = app.fleet.start_all

    async def recorded():
        seen_at_start.append((len(frames), sorted(app.panes)))
        await start_all()

    app.fleet.start_all = recorded
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: seen_at_start, what="the hosts' runtimes asked to start")
        frames_then, panes_then = seen_at_start[0]
        assert frames_then > 0, "nothing was drawn until every host's runtime had started"
        assert sorted(app.panes) == sorted(["gpus", "server", "bench", "roofline", "tasks", "campaign"])
        assert panes_then == sorted(app.panes)  # every tab is built before the runtimes report to them


async def test_footer_keeps_its_keys_when_the_bindings_do_not_change(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        from widgets.steady_footer import SteadyFooter

        footer = app.screen.query_one(SteadyFooter)
        looks = []
        look = footer._rebuild_if_changed

        async def counted() -> None:  # the footer's look after each refresh of the bindings
            await look()
            looks.append(len(looks))

        footer._rebuild_if_changed = counted
        # the first keys are drawn once the start-up focus moves have settled
        await wait_until(pilot, lambda: footer.shows_current_keys(),
                         what="the footer built with the keys it shows")
        before = list(app.screen.query(FooterKey))
        for _ in range(5):
            seen = len(looks)
            app.screen.refresh_bindings()
            await wait_until(pilot, lambda: len(looks) > seen and footer.shows_current_keys(),
                             what="the footer's look after the refresh")
        assert list(app.screen.query(FooterKey)) == before  # the same widgets: nothing rebuilt
        await pilot.press("3")
        await wait_until(pilot, lambda: any(k.description == "run sweep" for k in footer.shown_keys()),
                         what="the Bench tab's keys in the footer")


def _drawn(footer) -> list[tuple]:
    """The footer's keys and labels in order, as an operator reads them."""
    from textual.widgets._footer import FooterLabel

    from widgets.steady_footer import _on_show

    out = []
    for widget in footer.walk_children():
        if not _on_show(widget, footer):    # kept hidden for a tab with more keys
            continue
        if isinstance(widget, FooterKey):
            out.append(("key", widget.key_display, widget.description, widget.has_class("-disabled"),
                        widget.has_class("-command-palette")))
        elif isinstance(widget, FooterLabel):
            out.append(("label", str(widget.content)))
    return out


async def test_tab_switch_rewrites_the_footer_keys_in_place(demo_world):
    """A tab switch changes the footer's words, not its widgets: the keys that stay in number are
    the same widgets, and the footer reads as a full rebuild would (grouped keys included)."""
    from textual._context import active_message_pump
    from textual.compose import compose

    from widgets.steady_footer import SteadyFooter

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        footer = app.screen.query_one(SteadyFooter)
        await wait_until(pilot, lambda: len(app.panes) == 6 and app.screen.focused is not None, what="the tabs")
        for digit, tab in (("3", "bench"), ("5", "tasks"), ("2", "server"), ("1", "gpus")):
            keys_before = list(footer.query(FooterKey))
            await pilot.press(digit)
            await wait_until(pilot, lambda: app.tabs.active == tab and app.focused is not None
                             and app.panes[tab] in app.focused.ancestors, what=f"the {tab} tab focused")
            await pilot.pause()
            keys_after = list(footer.query(FooterKey))
            kept = [k for k in keys_after if k in keys_before]
            assert kept, f"every footer key was rebuilt for the {tab} tab"
            token = active_message_pump.set(footer)  # composed as the footer itself would
            try:
                fresh = compose(footer)
            finally:
                active_message_pump.reset(token)
            expected = []
            for widget in fresh:
                for node in [widget, *widget._pending_children]:
                    if isinstance(node, FooterKey):
                        expected.append(("key", node.key_display, node.description, node.has_class("-disabled"),
                                         node.has_class("-command-palette")))
                    elif type(node).__name__ == "FooterLabel":
                        expected.append(("label", str(node.content)))
            assert _drawn(footer) == expected, f"the {tab} tab's footer differs from a rebuilt one"


async def test_a_second_visit_to_each_tab_mounts_and_composes_nothing(demo_world, monkeypatch):
    """Each tab is built once: once every tab has been shown, going round them again composes and
    mounts no widget (the footer included: keys a tab does not use are kept hidden, not removed)."""
    from textual.widget import Widget

    from screens.tabs import TABS
    from widgets.steady_footer import SteadyFooter

    composed: list[str] = []
    compose_of = Widget._compose

    async def counted(self) -> None:     # every widget mounted is composed once, as it mounts
        composed.append(type(self).__name__)
        await compose_of(self)

    monkeypatch.setattr(Widget, "_compose", counted)
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        await app.started.wait()
        footer = app.screen.query_one(SteadyFooter)

        async def visit_each() -> None:
            for tab_id, *_ in TABS:
                app.action_tab(tab_id)
                await wait_until(pilot, lambda: app.tabs.active == tab_id and app.focused is not None
                                 and app.panes[tab_id] in app.focused.ancestors and footer.shows_current_keys(),
                                 what=f"the {tab_id} tab shown, its keys in the footer")
                await pilot.pause()

        await visit_each()
        assert composed, "the first visits composed nothing: the count is not counting"
        nodes = list(app.screen.walk_children())
        composed.clear()
        await visit_each()
        assert composed == []
        assert list(app.screen.walk_children()) == nodes      # the same widgets, none added or removed


class _Counted(App):
    def compose(self) -> ComposeResult:
        yield Static("shown", id="shown")
        yield Static("hidden", id="hidden")

    def on_mount(self) -> None:
        self.draws = {"shown": 0, "hidden": 0}
        self.throttles = {name: Throttle(self.query_one(f"#{name}"), lambda n=name: self._draw(n), 0.2)
                          for name in self.draws}
        self.query_one("#hidden").display = False

    def _draw(self, name: str) -> None:
        self.draws[name] += 1


async def test_throttle_coalesces_requests_and_waits_while_hidden():
    app = _Counted()
    async with app.run_test() as pilot:
        for _ in range(10):
            app.throttles["shown"].request()
            app.throttles["hidden"].request()
        assert app.draws["shown"] == 1  # the first at once
        await wait_until(pilot, lambda: app.draws["shown"] == 2, what="the one trailing draw")
        # nothing left to draw: no timer pending, nothing due (so no third draw can come)
        assert app.throttles["shown"]._timer is None and not app.throttles["shown"]._due
        assert app.throttles["hidden"]._timer is None
        assert app.draws == {"shown": 2, "hidden": 0}  # ten requests, two draws; none while hidden
        app.query_one("#hidden").display = True
        app.throttles["hidden"].flush()  # what a pane does when its tab is shown
        assert app.draws["hidden"] == 1
        app.throttles["hidden"].flush()
        assert app.draws["hidden"] == 1  # nothing new since: nothing drawn
