"""The log view on its own: line numbers, the decisive line, match k/n with wrap, highlights, follow, copy."""
from __future__ import annotations

from textual.app import App, ComposeResult

from console.clip import clip_file, osc52_allowed, save_clip
from tests.harness import wait_until
from widgets.log_view import DECISIVE_MARK, DECISIVE_STYLE, MATCH_STYLE, LogView

LINES = [f"line {i} {'ERROR boom' if i in (40, 60) else 'ok'}" for i in range(1, 101)]


class LogApp(App):
    def compose(self) -> ComposeResult:
        yield LogView()


def _row(view: LogView, y: int) -> str:
    return "".join(seg.text for seg in view._render_line_strip(y, view.rich_style))


def _styles_at(view: LogView, y: int, text: str) -> set[str]:
    strip = view._render_line_strip(y, view.rich_style)
    return {str(seg.style) for seg in strip if text in seg.text}


async def test_line_numbers_toggle():
    app = LogApp()
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(LogView)
        view.reset(first_number=801)
        view.add_lines(LINES)
        await pilot.pause()
        assert "801" not in _row(view, 0)
        view.toggle_numbers()
        assert _row(view, 0).lstrip().startswith("801 ")
        assert _row(view, 55).lstrip().startswith("856 ")
        view.toggle_numbers()
        assert "801" not in _row(view, 0)


async def test_search_counts_matches_and_says_when_it_wraps():
    app = LogApp()
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(LogView)
        view.add_lines(LINES)
        await pilot.pause()
        view.scroll_home(animate=False)
        first = view.find("boom")
        assert (first.number, first.ordinal, first.total, first.wrapped) == (40, 1, 2, False)
        second = view.find("boom")
        assert (second.number, second.ordinal, second.wrapped) == (60, 2, False)
        third = view.find("boom")
        assert (third.number, third.ordinal, third.wrapped) == (40, 1, True)
        assert "match 1/2" in third.describe("boom") and "wrapped" in third.describe("boom")
        back = view.find("boom", forward=False)
        assert back.number == 60 and back.wrapped
        assert view.find("nowhere") is None
        assert not view.follow


async def test_matches_are_highlighted_and_the_decisive_line_differs_from_other_errors():
    app = LogApp()
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(LogView)
        view.add_lines(LINES)
        await pilot.pause()
        view.find("boom")
        assert any(MATCH_STYLE.split()[-1] in s for s in _styles_at(view, 39, "boom"))
        view.needle = ""
        view.mark_decisive(60)
        assert view.jump_to_number(60)
        decisive, other = _row(view, 59), _row(view, 39)
        assert decisive.lstrip().startswith(DECISIVE_MARK) and not other.lstrip().startswith(DECISIVE_MARK)
        assert _styles_at(view, 59, "ERROR") != _styles_at(view, 39, "ERROR")
        assert any("on dark_red" in s for s in _styles_at(view, 59, "ERROR")) and DECISIVE_STYLE


async def test_follow_comes_back_with_one_call_and_the_current_line_is_what_a_copy_takes():
    app = LogApp()
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(LogView)
        view.add_lines(LINES)
        await wait_until(pilot, lambda: view.max_scroll_y > 0, what="the 100 lines laid out taller than the view")
        assert view.jump_to_number(40)
        assert view.current_line() == (40, "line 40 ERROR boom")
        assert not view.follow
        view.follow_end()
        view.add_lines(["the newest line"])
        assert view.follow and view.current is None
        # the log scrolls to its end once the new line is laid out (after the next refresh)
        await wait_until(pilot, lambda: view.virtual_size.height >= 101 and int(view.scroll_y) == view.max_scroll_y,
                         what="the view at the end of the log")
        assert view.current_line() == (101, "the newest line")


def test_copy_falls_back_to_a_file(gpudeck_home):
    path = save_clip("local", "RuntimeError: CUDA error\n")
    assert path == clip_file("local") and path.read_text() == "RuntimeError: CUDA error\n"
    assert not osc52_allowed({"TMUX": "/tmp/tmux-0/default,1,0"})
    assert osc52_allowed({"TMUX": "x", "GPUDECK_CLIPBOARD": "osc52"})
    assert osc52_allowed({})
    assert not osc52_allowed({"GPUDECK_CLIPBOARD": "file"})


def _last_line_in_view(view: LogView) -> bool:
    return bool(view.lines) and int(view.scroll_y) + view.size.height >= len(view.lines)


async def test_a_following_log_stays_at_its_end_through_a_resize_and_new_lines_appear():
    app = LogApp()
    async with app.run_test(size=(160, 45)) as pilot:
        view = app.query_one(LogView)
        view.add_lines(LINES)
        await wait_until(pilot, lambda: view.max_scroll_y > 0 and _last_line_in_view(view),
                         what="the log laid out at its end")
        await pilot.resize_terminal(100, 30)
        await wait_until(pilot, lambda: view.size.height < 40, what="the smaller terminal laid out")
        assert view.follow
        await wait_until(pilot, lambda: _last_line_in_view(view), what="line 100 still in view after the resize")
        view.add_lines(["the newest line"])
        await wait_until(pilot, lambda: len(view.lines) == 101 and _last_line_in_view(view),
                         what="the new line in view")
        assert view.current_line() == (101, "the newest line")
