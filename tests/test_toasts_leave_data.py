"""A toast lies over the console's header (the host line and the tab strip), never over a tab's
data: at 100x30 "copied crash excerpt …" covered the GPU 0 row of the GPUs tab."""
from __future__ import annotations

from textual.widgets._toast import Toast

from screens.app import GpudeckApp
from tests.harness import wait_until
from widgets.gpu_table import GPUTable


async def test_a_toast_does_not_cover_the_gpu_rows(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_until(pilot, lambda: app.started.is_set(), what="the console started")
        table = app.panes["gpus"].query_one(GPUTable)
        await wait_until(pilot, lambda: table.row_count > 0, what="the GPU rows")
        app.notify("copied crash excerpt: /tmp/gpudeck-demo-x/home/data/profiles/demo/clipboard.txt")
        await wait_until(pilot, lambda: bool(app.screen.query(Toast)) and app.screen.query(Toast).first().region.height > 0,
                         what="the toast shown")
        toast = app.screen.query(Toast).first()
        assert not toast.region.overlaps(table.region), f"the toast at {toast.region} covers the table at {table.region}"
        assert toast.region.bottom <= app.tabs.query_one("Tabs").region.bottom
