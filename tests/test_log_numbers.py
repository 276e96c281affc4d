"""The log view's line numbers are the file's line numbers, checked against `grep -n` on real logs.

Real server logs hold blank lines (tracebacks: "...\\n\\nThe above exception..."), carriage
returns mid-line (progress bars) and a last line still being written. Each number the view
shows, each search hit, each filter row, each jump and each copy must name the line that
`grep -n` gives that number, whether the view starts at line 1 or part-way (a partial first read).
"""
from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections import deque
from pathlib import Path

import pytest
from textual.app import App, ComposeResult

from console.safe_text import clean_line
from widgets.log_view import LogView

HERE = Path(__file__).parent
# Five families at least: sglang, vLLM, llama.cpp, lmdeploy, Triton/TensorRT-LLM, uvicorn, TGI.
LOGS = [
    HERE / "fixtures/demo/world/logs/run_tp8_ep8_crash-20261130-110904.log",  # the demo's crash, 2 blank lines
    HERE / "fixtures/logs/sglang-illegal-address-cascade.log",
    HERE / "fixtures/logs/vllm-nccl-watchdog-timeout.log",
    HERE / "fixtures/logs/llama-server-bad-model-path.log",
    HERE / "fixtures/logs/corpus-triton-nccl-oom-blank-lines.log",  # 13 blank lines in 27
    HERE / "fixtures/logs/corpus-sglang-healthy-carriage-returns.log",  # carriage returns mid-line
    HERE / "triage_corpus/logs/lmdeploy-2229-turbomind-model-config-loading.log",
    HERE / "triage_corpus/logs/uvicorn-litellm-2566-waiting-for-startup-debug.log",
    HERE / "triage_corpus/logs/tgi-686-sharded-llama-needs-flash-attention.log",
]


def grep_n(path: Path, pattern: str = "") -> dict[int, str]:
    """{number: text} as `grep -n` (fixed string, any case) prints them."""
    out = subprocess.run(["grep", "-n", "-i", "-F", "-a", "--", pattern, str(path)],
                         capture_output=True, check=False).stdout.decode("utf-8", "replace")
    found = {}
    for row in out.split("\n")[:-1]:
        number, _, text = row.partition(":")
        found[int(number)] = text.rstrip("\r")
    return found


def file_lines(path: Path) -> list[str]:
    """The lines as the log tail hands them on: split at newline only, line ends stripped."""
    text = path.read_bytes().decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip("\r") for line in lines]


def a_needle(truth: dict[int, str]) -> str:
    """A word from a line far into the file, so a shift would land elsewhere."""
    for number in sorted(truth, reverse=True):
        words = [w for w in truth[number].split() if len(w) >= 6 and w.isascii() and w.isprintable()]
        if words:
            return words[0]
    raise AssertionError("no word to search for")


class LogApp(App):
    def compose(self) -> ComposeResult:
        yield LogView()


def gutter_number(view: LogView, y: int) -> int | None:
    row = "".join(seg.text for seg in view._render_line_strip(y, view.rich_style))
    head = row[:view.gutter_width()].split()
    return int(head[0]) if head and head[0].isdigit() else None


async def check_view(view: LogView, pilot, path: Path, first: int) -> None:
    truth = grep_n(path)
    assert len(truth) >= 6, path
    view.reset(first_number=first)
    view.add_lines(file_lines(path)[first - 1:])
    if not view.numbers:
        view.toggle_numbers()
    await pilot.pause()
    # every row: the number drawn names the line drawn
    assert len(view.lines) == len(truth) - first + 1, path.name
    for y in range(len(view.lines)):
        number = gutter_number(view, y)
        assert number == y + first, (path.name, y)
        assert view.lines[y].rstrip() == clean_line(truth[number]).rstrip(), (path.name, number)
    # search: the match named is the line grep names, and the copy takes that line
    needle = a_needle(truth)
    hits = sorted(grep_n(path, needle))
    hits = [n for n in hits if n >= first]
    view.current = None
    view.scroll_home(animate=False)
    found = view.find(needle)
    assert found is not None and found.number == hits[0] and found.total == len(hits), (path.name, needle)
    assert view.current_line() == (hits[0], clean_line(truth[hits[0]])), path.name
    # a jump (j, ▶) lands on the line of that number, and y copies it
    target = max(truth)
    assert view.jump_to_number(target)
    assert view.current_line() == (target, clean_line(truth[target])), path.name
    # the filter keeps numbers too, and leaving it keeps them
    view.set_filter(needle)
    await pilot.pause()
    assert [gutter_number(view, y) for y in range(len(view.lines))] == hits, path.name
    view.set_filter(None)
    await pilot.pause()
    assert [gutter_number(view, y) for y in range(len(view.lines))] == list(range(first, max(truth) + 1))


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
async def test_view_numbers_match_grep_n(path: Path):
    assert path.exists(), path
    app = LogApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(LogView)
        await check_view(view, pilot, path, first=1)
        # a partial first read: the view starts at the file's line 4
        await check_view(view, pilot, path, first=4)


async def test_the_demo_crash_line_is_the_runtime_error():
    """The issue's case: the banner's line 851 is the RuntimeError in the view too, not two lines above it."""
    path = LOGS[0]
    number = min(grep_n(path, "RuntimeError: CUDA error"))
    app = LogApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(LogView)
        view.add_lines(file_lines(path))
        view.mark_decisive(number)
        await pilot.pause()
        assert view.jump_to_number(number)
        got_number, text = view.current_line()
        assert got_number == number and text.startswith("RuntimeError: CUDA error")
        row = view.shown.index(number)
        assert view.lines[row].startswith("RuntimeError")


def _local_runtime():
    from console.runtime.host_runtime import HostRuntime
    from console.session import HostSession
    from profiles import store
    from profiles.profile import profile_from_dict

    store.save(profile_from_dict("box", {"transport": "local"}))
    return HostRuntime(HostSession.open(store.load("box")))


async def test_read_log_numbers_its_first_line_as_grep_does(tmp_path):
    """An old log read part-way: the number of its first line is right when the log holds carriage
    returns mid-line and its last line has no newline yet (a server still writing)."""
    from console.store.launches import LaunchRecord

    source = (HERE / "fixtures/logs/corpus-sglang-healthy-carriage-returns.log").read_bytes()
    log = tmp_path / "server.log"
    log.write_bytes(source + b"still writing this line")
    record = LaunchRecord(id="r", config="c", script=None, log=str(log), exit_file=None, state="stopped")
    runtime = _local_runtime()
    first, lines = await runtime.read_log(record, lines=5)
    truth = grep_n(log)
    assert len(lines) == 5 and first == max(truth) - 4
    assert [clean_line(x) for x in lines] == [clean_line(truth[n]) for n in range(first, first + 5)]
    _, whole = await runtime.read_log(record, lines=10000)
    assert len(whole) == len(truth)


async def test_a_view_opened_late_numbers_the_kept_lines_from_the_file(tmp_path):
    """A running server's view starts from the lines the monitor kept; when it kept only the latest
    ones, the first kept line carries its true number, and no line is handed on twice."""
    from console.servers.monitor import ServerMonitor
    from console.store.launches import LaunchRecord

    path = HERE / "fixtures/logs/corpus-triton-nccl-oom-blank-lines.log"
    log = tmp_path / "server.log"
    shutil.copy(path, log)
    truth = grep_n(log)
    record = LaunchRecord(id="r", config="c", script=None, log=str(log), exit_file=None, state="loading")
    handed: list[str] = []
    monitor = ServerMonitor(_local_runtime().session, record, on_lines=handed.extend)
    monitor.seen = deque(maxlen=10)  # keeps only the latest ten
    task = asyncio.create_task(monitor._follow_log())
    try:
        deadline = asyncio.get_running_loop().time() + 30  # a bound for a busy machine, not a speed check
        while monitor.handed < len(truth) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        first, kept = monitor.seen_from()
        assert monitor.handed == len(truth) == len(handed)
        assert first == len(truth) - 9 and len(kept) == 10
        assert kept == [truth[n] for n in range(first, len(truth) + 1)]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
