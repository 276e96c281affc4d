"""`z` zooms the Server tab's log to the whole tab and back (Esc too): at 100x30 the log had a
dozen rows under the configs and flags, four with the metrics line and the crash panel. A
following log stays on its last line through the zoom."""
from __future__ import annotations

from screens.app import GpudeckApp
from tests.harness import wait_until
from tests.test_server_pane import _stopped_launch
from widgets.log_view import LogView


async def test_z_gives_the_log_the_whole_tab_and_esc_takes_it_back(tmp_path):
    _stopped_launch(tmp_path, "segv", "".join(f"line {i} ok\n" for i in range(1, 100)) + "Segmentation fault\n", 139)
    app = GpudeckApp()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        view = pane.query_one(LogView)

        def last_in_view() -> bool:
            return len(view.lines) == 100 and int(view.scroll_y) + view.size.height >= 100

        await wait_until(pilot, last_in_view, what="the log at its last line")
        before = view.size.height
        await pilot.press("z")
        await wait_until(pilot, lambda: view.size.height >= pane.size.height - 3, what="the log over the whole tab")
        await wait_until(pilot, last_in_view, what="the last line still in view, zoomed")
        assert app.focused is view and pane.query_one("#top").region.height == 0  # the configs and flags hidden
        await pilot.press("escape")
        await wait_until(pilot, lambda: view.size.height == before, what="the configs back")
        await wait_until(pilot, last_in_view, what="the last line still in view")
