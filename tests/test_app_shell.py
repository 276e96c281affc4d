"""The app shell: starts, shows every host with a chip, switches hosts, tabs by key."""
from __future__ import annotations

from textual.widgets import TabbedContent

from profiles import store
from profiles.profile import profile_from_dict
from screens.app import GpudeckApp
from screens.host_switcher import HostSwitcher
from tests.harness import wait_until
from widgets.host_chips import HostChips


async def test_app_starts_on_local_with_six_tabs():
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        tabs = app.query_one(TabbedContent)
        assert [p.id for p in tabs.query("TabPane")] == ["gpus", "server", "bench", "roofline", "tasks", "campaign"]
        chips = app.query_one(HostChips)
        # the local host's status comes from its runtime, which starts with the app
        await wait_until(pilot, lambda: "● connected" in chips.line_text().plain, what="the local chip connected")
        assert chips.line_text().plain.startswith(" gpudeck  local  local  ● connected")
        for key, tab in zip("123456", ["gpus", "server", "bench", "roofline", "tasks", "campaign"]):
            await pilot.press(key)
            await wait_until(pilot, lambda: tabs.active == tab, what=f"{key} opening the {tab} tab")


async def test_host_switcher_opens_another_profile_and_remembers_it(ssh_profile):
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("H")
        await wait_until(pilot, lambda: isinstance(app.screen, HostSwitcher) and app.screen.query("OptionList")
                         and app.focused is app.screen.query_one("OptionList"), what="the host switcher")
        names = [app.screen.query_one("OptionList").get_option_at_index(i).id for i in range(2)]
        assert names == ["local", "testbox"]
        await pilot.press("down", "enter")
        # each pane takes the new host's session as it is opened
        await wait_until(pilot, lambda: app.current == "testbox"
                         and all(p.session is not None and p.session.name == "testbox" for p in app.panes.values()),
                         what="every pane on testbox")
        # the chip shows the host once the keep-alive ping has connected
        await wait_until(pilot, lambda: app.fleet.hosts["testbox"].status.state == "connected", 5,
                         "the keep-alive ping to connect")
        assert "testbox" in app.query_one(HostChips).line_text().plain
    assert store.last_used() == "testbox"


async def test_unreachable_host_chip_says_down_since(gpudeck_home):
    from tests.realparts import free_port

    store.save(profile_from_dict("deadbox", {"transport": "ssh", "ssh": {
        "host": "127.0.0.1", "port": free_port(), "connect_timeout_s": 2}}))
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: "deadbox ○ down since" in app.query_one(HostChips).line_text().plain,
                         10, "the chip to say the host is down")


async def test_readonly_is_shown():
    app = GpudeckApp(readonly=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert "READ-ONLY" in app.query_one(HostChips).line_text().plain
        # each pane is read-only through its session, handed over as the host is opened
        await wait_until(pilot, lambda: all(p.session is not None for p in app.panes.values()), what="every pane's session")
        assert all(p.readonly for p in app.panes.values())


async def test_a_corrupt_profile_is_reported_not_fatal(gpudeck_home):
    from profiles import paths

    paths.profiles_dir().mkdir(parents=True, exist_ok=True)
    paths.profile_file("broken").write_text("[ssh\n")
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert app.fleet.names() == ["local"]
        assert any("broken.toml:1" in e for e in app.profile_errors)


async def test_a_toast_repaint_due_after_the_app_has_closed_is_no_error():
    """A toast's repaint timer can fire while the app shuts down, its screens already gone."""
    app = GpudeckApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
    assert not app.screen_stack
    app._repaint_after_toast()  # what the timer of a toast shown just before quitting calls
