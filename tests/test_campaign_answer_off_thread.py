"""The Campaign tab computes its answer off the UI thread: while it is computing the tab shows its
title and grid, says the answer is coming and still answers keys; the answer is drawn when it
arrives, and an answer for an older state is never drawn over a newer one."""
from __future__ import annotations

import threading

from console.campaign import answer as answer_module
from console.session import HostSession
from profiles import store
from tests.harness import HostApp, wait_until
from tests.test_campaign_tab import _saved


def _held(monkeypatch) -> tuple[threading.Event, list]:
    """`answer` as the pane calls it, held until the event is set; the states it was asked for."""
    import screens.campaign_pane as pane_module

    release, asked = threading.Event(), []

    def held(state, roof=None, roof_note=""):
        asked.append(state)
        release.wait(60)   # never forever: a test that fails still ends
        return answer_module.answer(state, roof, roof_note)
    monkeypatch.setattr(pane_module, "answer", held)
    return release, asked


async def test_keys_are_answered_while_the_answer_is_computing(monkeypatch):
    from screens.campaign_pane import CampaignPane
    from screens.confirm import Confirm

    release, asked = _held(monkeypatch)
    _saved("running")
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=(160, 45)) as pilot:
        pane, result = app.pane, app.pane.query_one("#camp-result")
        try:
            await wait_until(pilot, lambda: pane.state is not None and asked, what="the answer asked for")
            assert "computing the answer" in str(result.render())
            assert pane.state.id in str(pane.query_one("#camp-title").render())
            grid = pane.query_one("CampaignGrid")   # drawn while the answer is still held
            await wait_until(pilot, lambda: grid.row_count == 2, 5, "the grid drawn before the answer")
            pane.focus()
            await pilot.press("x")   # the stop key, handled while the worker holds
            await wait_until(pilot, lambda: isinstance(app.screen, Confirm), 5, "the stop question")
            await pilot.press("n")
            await wait_until(pilot, lambda: "not stopped" in pane.message, 5, "the answer no")
            assert not pane.answered() and "computing the answer" in str(result.render())
        finally:
            release.set()
        await wait_until(pilot, lambda: pane.answered() and str(result.render()).startswith("leading so far"),
                         what="the answer drawn once computed")


async def test_an_older_answer_is_never_drawn_over_a_newer_state(monkeypatch):
    from dataclasses import replace

    from screens.campaign_pane import CampaignPane

    release, asked = _held(monkeypatch)
    _saved("running")
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=(160, 45)) as pilot:
        pane, result = app.pane, app.pane.query_one("#camp-result")
        try:
            await wait_until(pilot, lambda: pane.state is not None and asked, what="the answer asked for")
            first, drawn, draw = asked[-1], [], pane._draw_answer
            pane._draw_answer = lambda got: (drawn.append(got), draw(got))
            newer = replace(pane.state, status="finished")
            pane.state = newer
            pane.draw()
        finally:
            release.set()
        await wait_until(pilot, lambda: pane.answered(), what="the newer state answered")
        assert pane.answer_for[0] is newer and asked[-1] is newer and first is not newer
        assert str(result.render()).startswith("winner")
        assert drawn and all(got.verdict[0].startswith("winner") for got in drawn), \
            [got.verdict for got in drawn]   # the running state's "leading so far" never drawn
