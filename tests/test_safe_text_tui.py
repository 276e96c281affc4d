"""External text never drives the terminal from the TUI: every widget and pane, fed the hostile corpus.

What is checked is what Textual would write: the text of every segment the
compositor renders for the screen. No control character may be in it, no
markup from the data may have turned into a style or a link, and the text
must still be there, visibly.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from textual.app import App
from textual.widgets import Static

from console.bench.live import LevelView
from console.gpus.fleet_table import HostRow
from console.gpus.model import GPU, GPUProcess
from console.servers.launch import FLAG_KEYS
from profiles.task_model import Task
from profiles.task_suggestion import Suggestion
from tests.harness import wait_until
from tests.hostile_text import HOSTILE, LINE, MARK, unsafe_chars
from widgets.bench_compare import BenchCompareTable
from widgets.bench_form import BenchForm
from widgets.bench_table import BenchLevelTable
from widgets.gpu_fleet import FleetTable
from widgets.gpu_processes import GPUProcessTable
from widgets.gpu_table import GPUTable
from widgets.host_chips import Chip, HostChips
from widgets.log_view import LogView
from widgets.roofline_headline import RooflineHeadline
from widgets.roofline_table import RooflineTable
from widgets.safe_table import SafeDataTable
from widgets.server_flags import diff_rows
from widgets.task_rows import detail_line, suggestion_line
from widgets.task_table import TaskTable

SIZE = (220, 120)


def rendered(app) -> tuple[str, list[str]]:
    """The screen as Textual would draw it: all segment text, and every link a segment carries."""
    strips = app.screen._compositor.render_strips()
    text = "\n".join("".join(seg.text for seg in strip) for strip in strips)
    links = [seg.style.link for strip in strips for seg in strip if seg.style is not None and seg.style.link]
    return text, links


def assert_harmless(app, expect_marks: int = 1) -> str:
    text, links = rendered(app)
    assert unsafe_chars(text) == [], text
    assert links == []
    assert text.count(MARK) >= expect_marks, text
    return text


class Gallery(App):
    """Every data-drawing widget at once."""

    def compose(self):
        yield HostChips(id="chips")
        yield GPUTable(id="gpus")
        yield GPUProcessTable(id="procs")
        yield FleetTable(id="fleet")
        yield BenchLevelTable(id="levels")
        yield BenchCompareTable(id="compare")
        yield RooflineTable(id="roof")
        yield RooflineHeadline(id="head")
        yield TaskTable(id="tasks")
        yield Static(id="suggestion")
        yield Static(id="detail")
        yield SafeDataTable(id="flags")
        yield LogView(id="log")
        yield BenchForm(id="form")


async def test_every_widget_draws_hostile_text_literally():
    app = Gallery()
    async with app.run_test(size=SIZE) as pilot:
        app.query_one(HostChips).show([
            Chip(name=f"{MARK}{HOSTILE[0]}", target=HOSTILE[1], state="connected", since=0, current=True),
            Chip(name=f"{MARK}{HOSTILE[5]}", target=HOSTILE[2], state="down", since=0)])
        app.query_one(GPUTable).show([GPU(index=i, uuid=f"u{i}", name=f"{MARK}{t}") for i, t in enumerate(HOSTILE)],
                                     {})
        app.query_one(GPUProcessTable).show(
            [GPUProcess(gpu_index=0, pid=100 + i, type="C", name=f"{MARK} {t}", used_memory_mib=1)
             for i, t in enumerate(HOSTILE)])
        app.query_one(FleetTable).show([
            HostRow(host=f"{MARK}{t}", reachable=False, state=t, gpus=None, util_pct=None, busy=0, idle=0, stale=0,
                    memory_used_mib=None, memory_total_mib=None, temp_max_c=None, power_w=None, age_s=None,
                    sample_stale=False, message=t)
            for t in HOSTILE[:4]])
        app.query_one(BenchLevelTable).show([
            LevelView(concurrency=i + 1, num_prompts=1, status="failed", failed=1,
                      summary={"errors": [f"{MARK} {t}"]}) for i, t in enumerate(HOSTILE)])
        app.query_one(BenchCompareTable).show([
            {"concurrency": 1, "status": [f"{MARK}{HOSTILE[0]}", HOSTILE[5]], "metrics": {}}])
        app.query_one(RooflineTable).show([
            SimpleNamespace(batch=1, ideal_tok_s=10.0, realistic_tok_s=9.0, measured_tok_s=None,
                            measured_status=f"{MARK}{HOSTILE[6]}", efficiency_pct=None, fitted_tok_s=None,
                            bound=HOSTILE[0])])
        app.query_one(RooflineHeadline).show(None, f"{MARK} setup {LINE}", problem=f"{MARK} {LINE}")
        tasks = [Task(id=i + 1, text=f"{MARK} {t}", notes=t, config=t) for i, t in enumerate(HOSTILE)]
        app.query_one(TaskTable).show(tasks)
        app.query_one("#suggestion", Static).update(
            suggestion_line([Suggestion(key="k", text=f"{MARK} {LINE}", kind="crash")], readonly=False))
        app.query_one("#detail", Static).update(detail_line(tasks[0]))
        flags = app.query_one("#flags", SafeDataTable)
        flags.add_columns("flag", "a", "b")
        key = FLAG_KEYS[0][0]
        for row in diff_rows({key: f"{MARK}{HOSTILE[0]}"}, {key: f"{MARK}{HOSTILE[6]}"}):
            flags.add_row(*row)
        app.query_one(LogView).add_lines([f"{MARK} {t}" for t in HOSTILE])
        form = app.query_one(BenchForm)
        form.set_url(f"http://{MARK}{HOSTILE[0]}")
        form.set_models([f"{MARK} {HOSTILE[1]}", "m2"])  # model ids a server listed
        # the screen is composed on the next refresh: wait until it holds what was put in
        await wait_until(pilot, lambda: rendered(app)[0].count(MARK) >= len(HOSTILE)
                         and "[link=file:///etc/passwd]innocent[/link]" in rendered(app)[0], what="the data drawn")
        text = assert_harmless(app, expect_marks=len(HOSTILE))
        assert "[bold red]x.sh" in text  # markup in the data shows as text
        assert "[link=file:///etc/passwd]innocent[/link]" in text


# ---- the whole app ---------------------------------------------------------------------------

def _hostile_host(tmp_path):
    from console.store import crashes
    from console.store.launches import LaunchRecord
    from profiles import store
    from console.store.task_board import TaskBoard

    board = TaskBoard.for_profile("local")
    for text in HOSTILE:
        board.add(f"{MARK} {text}", notes=text)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for i, text in enumerate(HOSTILE):
        name = (f"{MARK}{i}" + text.replace("/", "_").replace("\x00", "0"))[:80] + ".sh"
        (scripts / name).write_text("#!/bin/sh\nexec python3 -m sglang.launch_server --tp 2\n")
    profile = store.load("local")
    profile.server.scripts_dir = str(scripts)
    store.save(profile)
    record = LaunchRecord(id="r1", config=f"{MARK}{HOSTILE[5]}", script=None, log=None, exit_file=None,
                          state="crashed")
    verdict = SimpleNamespace(cls=f"{MARK}{HOSTILE[0]}", line=3, summary=f"{MARK} {LINE}", excerpt=HOSTILE,
                              server="sglang")
    crashes.write_crash("local", record, verdict)


async def drawn(pilot, app, marks: int = 1) -> str:
    """Once the screen shows `marks` marked texts, check it draws them harmlessly; the screen's text."""
    await wait_until(pilot, lambda: rendered(app)[0].count(MARK) >= marks, what=f"{marks} marked texts on screen")
    return assert_harmless(app, expect_marks=marks)


@pytest.mark.slow
async def test_panes_toasts_and_dialogs_draw_hostile_text_literally(tmp_path):
    from screens.app import GpudeckApp
    from screens.confirm import Confirm

    _hostile_host(tmp_path)
    app = GpudeckApp()
    async with app.run_test(size=SIZE) as pilot:
        server = app.panes["server"]
        await pilot.press("2")
        # (names with a CR or another line break come back split by the listing; the rest arrive whole)
        await wait_until(pilot, lambda: len(server.configs) >= 10)
        await drawn(pilot, app, 3)  # config names, the crash banner and its summary

        server.query_one(LogView).add_lines([f"{MARK} {t}" for t in HOSTILE])
        server.notify(f"{MARK} {LINE}")
        app.notify(f"{MARK} {LINE}", title=HOSTILE[0])
        text = await drawn(pilot, app, 3 + 2)
        assert "[link=file:///etc/passwd]innocent[/link]" in text

        await pilot.press("5")
        tasks = app.panes["tasks"]
        await wait_until(pilot, lambda: tasks.board is not None and len(tasks.board.tasks) == len(HOSTILE))
        await drawn(pilot, app, len(HOSTILE))
        await pilot.press("e")  # the editor opens on the task's text: an Input draws its value raw
        await wait_until(pilot, lambda: tasks.query_one("#editor").has_class("shown"))
        await drawn(pilot, app, len(HOSTILE))
        await pilot.press("escape")

        await pilot.press("3")
        bench = app.panes["bench"]
        bench._error(f"{MARK} {LINE}")
        await drawn(pilot, app)

        app.push_screen(Confirm(f"{MARK} stop {HOSTILE[0]}?", [f"{MARK} {t}" for t in HOSTILE]))
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
        await drawn(pilot, app, len(HOSTILE))
