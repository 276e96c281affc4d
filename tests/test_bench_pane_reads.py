"""The Bench tab draws what its host's runtime reads: the form's URL and last settings, the
newest saved run, the runs to compare with. The runtime reads them in a worker thread; the
pane itself reads no store."""
from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from console.bench import form_memory, results
from console.bench.events import parse_line
from console.bench.live import view_from_run
from console.bench.results import RunStore
from console.runtime.host_runtime import HostRuntime
from console.session import HostSession
from profiles.profile import profile_from_dict
from screens.bench_pane import BenchPane
from tests.harness import HostApp, wait_until
from widgets.bench_compare import BenchCompareTable

FIXTURES = Path(__file__).parent / "fixtures" / "bench"


def _save_run(profile: str, recording: str, run_id: str) -> Path:
    """A recorded sweep's level summaries saved as a run of `profile`."""
    events = [parse_line(line) for line in (FIXTURES / recording).read_text().splitlines()]
    start = next(e for e in events if e["event"] == "run-start")
    store = RunStore(profile, run_id)
    store.save({"run_id": run_id, "url": start["url"], "model": start["model"], "workload": start["workload"],
                "started": f"2026-11-29T{run_id[-6:-4]}:00:00", "status": "done", "path": str(store.path),
                "levels": [e["summary"] for e in events if e["event"] == "level-end"]})
    return store.path


def test_the_runtime_reads_the_bench_tabs_state_in_a_worker_thread(monkeypatch):
    _save_run("local", "sweep_died.jsonl", "sweep-20261129-100000")
    newest = _save_run("local", "sweep_ok.jsonl", "sweep-20261129-110000")
    form_memory.save("local", {"levels": "1,2,4", "input_len": "64"})
    threads: list[str] = []

    def in_thread(read):
        def wrapped(*args, **kwargs):
            threads.append(threading.current_thread().name)
            return read(*args, **kwargs)
        return wrapped

    for module, name in ((results, "list_runs"), (results, "load_run"), (form_memory, "load"),
                         (form_memory, "larger_than_before")):
        monkeypatch.setattr(module, name, in_thread(getattr(module, name)))
    runtime = HostRuntime(HostSession.open(profile_from_dict("local", {"server": {"url": "http://127.0.0.1:9"}})))

    async def main():
        return (await runtime.bench_url(), await runtime.bench_form(), await runtime.latest_saved_view(),
                await runtime.saved_runs(), await runtime.saved_run(str(newest)),
                await runtime.larger_sweep_than_before("1,512"))

    url, form, view, runs, doc, larger = asyncio.run(main())
    assert url == "http://127.0.0.1:9" and form["levels"] == "1,2,4"
    assert view.run_id == "sweep-20261129-110000" and len(view.levels) == 3
    assert [r["run_id"] for r in runs] == ["sweep-20261129-110000", "sweep-20261129-100000"]
    assert doc["run_id"] == "sweep-20261129-110000" and larger == (512, 4)
    assert threads and threading.main_thread().name not in threads


async def test_the_pane_shows_what_its_runtime_read(monkeypatch):
    # the runs live under another profile: only the runtime's answers can bring them to this tab
    earlier = _save_run("elsewhere", "sweep_died.jsonl", "sweep-20261129-100000")
    latest = _save_run("elsewhere", "sweep_ok.jsonl", "sweep-20261129-110000")
    asked: list[str] = []

    def answer(name, value):
        async def method(self, *args):
            asked.append(name)
            return value(*args)
        monkeypatch.setattr(HostRuntime, name, method, raising=False)

    answer("bench_url", lambda: "http://127.0.0.1:7")
    answer("bench_form", lambda: {"levels": "3,6", "output_len": "48"})
    answer("latest_saved_view", lambda: view_from_run(results.load_run(latest)))
    answer("saved_runs", lambda: results.list_runs("elsewhere"))
    answer("saved_run", results.load_run)

    app = HostApp(BenchPane(id="pane-bench"),
                  HostSession.open(profile_from_dict("local", {"server": {"url": "http://127.0.0.1:9"}})))
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        # the form and the latest run are read through the runtime when the tab opens
        await wait_until(pilot, lambda: pane.view.run_id == "sweep-20261129-110000"
                         and pane.query_one("BenchForm").values()["levels"] == "3,6", what="the form and run read")
        values = pane.query_one("BenchForm").values()
        assert (values["url"], values["levels"], values["output_len"]) == ("http://127.0.0.1:7", "3,6", "48")
        assert pane.view.run_id == "sweep-20261129-110000" and len(pane.view.levels) == 3
        pane.query_one("BenchLevelTable").focus()
        await pilot.press("c")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "PickRun", what="the run picker")
        assert app.screen.__class__.__name__ == "PickRun"
        await pilot.press("enter")
        await wait_until(pilot, lambda: pane.has_class("comparing"), what="the comparison")
        assert pane.overlay is not None and pane.overlay[0] == "sweep-20261129-100000"
        assert pane.query_one(BenchCompareTable).row_count == 3
    assert {"bench_url", "bench_form", "latest_saved_view", "saved_runs", "saved_run"} <= set(asked)
    assert earlier.exists()
