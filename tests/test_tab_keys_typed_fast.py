"""Tab keys typed back to back (a paste, a fast typist) are each applied, in order: the last wins.

The keys are handed to the app the way a terminal delivers them, one right after the other with
no wait for the app to settle in between (Pilot's `press` waits for idle between keys, which
hid the race: a focus Textual left in a tab the next key had already hidden took that tab back)."""
from __future__ import annotations

import pytest
from textual import events

from screens.app import GpudeckApp
from tests.harness import wait_until


def _type_at_once(app, keys: tuple[str, ...]) -> None:
    for key in keys:
        event = events.Key(key, key)
        event.set_sender(app)
        app._driver.send_message(event)


@pytest.mark.parametrize("keys, last", [(("2", "5", "3"), "bench"), (("4", "5", "3"), "bench")])
async def test_the_last_of_three_tab_keys_typed_at_once_is_the_tab_shown(demo_world, keys, last):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        await app.started.wait()
        _type_at_once(app, keys)
        pane = app.panes[last]
        await wait_until(pilot, lambda: app.tabs.active == last and app._focus_in(pane),
                         what=f"{' '.join(keys)} ending on the {last} tab, its body focused")
        await pilot.pause()
        await pilot.pause()
        assert app.tabs.active == last, f"{' '.join(keys)}: the {app.tabs.active} tab took the screen back"
        await pilot.press(*keys)   # the same through Pilot, which waits for idle between keys
        await wait_until(pilot, lambda: app.tabs.active == last and app._focus_in(pane),
                         what=f"{' '.join(keys)} pressed, ending on the {last} tab")
        await pilot.pause()
        assert app.tabs.active == last
