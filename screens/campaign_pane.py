"""The Campaign tab: the profile's campaign as it runs (configs x levels), its time, its winner.

The campaign itself runs in its own detached process (console.campaign); the
host runtime follows its saved state and sends CampaignChanged events, which
this pane renders. Its keys call the engine to start, stop or resume it.
"""
from __future__ import annotations

import asyncio

from rich.text import Text
from textual import work
from textual.binding import Binding
from textual.widgets import Static

from console.campaign import control, owner
from console.campaign.answer import Answer, answer
from console.campaign.compare import efficiency_text, energy_summary, invalid_lines, load_text
from console.campaign.spec import CampaignError
from console.campaign.lock import LockHeld
from console.store.campaigns import campaign_file
from console.fmt import duration
from console.safe_text import clean_line
from console.runtime import events as ev
from widgets.campaign_frontier import CampaignFrontier, frontier_legend
from widgets.campaign_grid import CampaignGrid

from .confirm import Confirm
from .pane import Pane


# What the grid shows of a cell before its answer (widgets/campaign_grid.py reads these): not the
# whole cell, whose repeats make Cell.to_json() cost ~1 ms a config on the UI thread
GRID_AT_ONCE = ("name", "status", "crash_class", "crash_record", "note", "levels", "live")


class CampaignPane(Pane):
    TAB_TITLE = "Campaign"
    DESTRUCTIVE_ACTIONS = frozenset({"run", "stop", "resume"})
    BINDINGS = [
        Binding("r", "run", "run campaign"),
        Binding("x", "stop", "stop"),
        Binding("R", "resume", "resume"),
    ]
    DEFAULT_CSS = """
    CampaignPane #camp-title { height: auto; }
    CampaignPane CampaignGrid { height: auto; max-height: 50%; }
    CampaignPane #camp-result { height: auto; }
    CampaignPane CampaignFrontier { height: 1fr; min-height: 10; }
    CampaignPane #camp-legend { height: auto; }
    """

    # Below this height (a 100x30 split's pane is 26 rows) the answer keeps its verdict and the
    # leader's efficiency; the SLO lines and the interval method give their rows to the frontier
    SHORT = 34

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.state = None
        self.seen = None   # the campaign's reading (console.campaign.owner.Reading), as the runtime last read it
        self.message = ""
        self.message_while_running = False   # a line about the running driver: gone once it ends
        self.roof = None
        self.roof_note = ""
        self.answer: Answer | None = None   # the answer drawn, and the inputs it was computed from
        self.answer_for: tuple | None = None
        self._answering = False             # a worker is computing (it takes up a newer state when done)

    def answered(self) -> bool:
        """Whether the answer on screen is for the state and roofline the pane holds now."""
        return self.state is None or self._current(self.answer_for)

    def _inputs(self) -> tuple:
        return (self.state, self.roof, self.roof_note)

    def _current(self, inputs: tuple | None) -> bool:
        """Whether `inputs` are the very objects the pane holds (the runtime hands a new state per change)."""
        return inputs is not None and inputs[0] is self.state and inputs[1] is self.roof and inputs[2] == self.roof_note

    def compose(self):
        yield Static(id="camp-title")
        yield CampaignGrid(id="camp-grid")
        yield Static(id="camp-result")
        yield Static(id="camp-legend")  # the chart's legend, over it: plotext's own covered the c=1 points
        yield CampaignFrontier(id="camp-frontier")

    def on_mount(self) -> None:
        self.draw()

    def on_resize(self, event) -> None:
        short = event.size.height < self.SHORT
        if short != self.has_class("short"):
            self.set_class(short, "short")
            if self.session is not None:  # before a host is open there is nothing to redraw
                self.draw()

    async def set_session(self, target) -> None:
        await super().set_session(target)
        self.state = self.runtime.campaign
        self.seen = self.runtime.campaign_view  # a campaign seen before this pane looked: its elapsed time too
        self.message = ""
        self.draw()
        self.load_roofline()

    @work(exclusive=True, group="campaign-roofline")
    async def load_roofline(self) -> None:
        """The profile's roofline for efficiency, from the runtime (which reads the model off the loop)."""
        runtime = self.runtime
        roof, note = await runtime.profile_roofline()
        if runtime is self.runtime:   # not a host the operator has since left
            self.roof, self.roof_note = roof, note
            self.draw()

    def runtime_event(self, event) -> None:
        if isinstance(event, ev.CampaignChanged):
            self.state, self.seen = event.state, event.view
            self.draw()

    def draw(self) -> None:
        if not self.is_mounted or not self.query("#camp-title"):
            return   # an event before the pane is composed: the first draw after mount shows it
        title = self.query_one("#camp-title", Static)
        result = self.query_one("#camp-result", Static)
        grid = self.query_one(CampaignGrid)
        state = self.state
        name = self.session.name if self.session else "?"
        if state is None:
            path = campaign_file(name)
            how = (f"read-only console: start one with gpudeck campaign run FILE -p {name}" if self.readonly
                   else f"r runs {path} (or: gpudeck campaign run FILE -p {name})")  # no key that is off
            title.update(Text.assemble(("no campaign yet on this host. ", "bold"), clean_line(how),
                                       ("\n" + clean_line(self.message), "yellow") if self.message else ""))
            grid.show([], [])
            result.update("")
            self.query_one(CampaignFrontier).show(None)
            self.query_one("#camp-legend", Static).update("")
            self.set_summary("")
            return
        seen = self.seen if self.seen is not None and self.seen.id == state.id else owner.read(state)
        text = Text.assemble((f" {state.id} ", "bold reverse"), f"  {state.status}")
        if seen.driving:
            text.append(f"  {seen.driver_text()}", style="green")
        elif seen.driver_text():
            text.append(f"  · {seen.driver_text()}", style="yellow" if seen.driver == owner.GONE else "dim")
        text.append(f"  · {seen.progress.text()} · elapsed {duration(seen.elapsed_s)}")
        if seen.left_text():
            text.append(f" · {seen.left_text()}")
        if seen.current:
            text.append(f"\n now: {clean_line(seen.current)}", style="bold cyan")
        if seen.note:
            text.append(f"\n {clean_line(seen.note)}", style="yellow")
        if self.message_while_running and state.status != "running" and not seen.driving:
            # the campaign the line spoke of has ended (a resumed one is still "stopped" until its
            # new driver writes, but that driver is already alive)
            self.message, self.message_while_running = "", False
        if self.message:
            text.append(f"\n {clean_line(self.message)}", style="yellow")
        title.update(text)
        crashed = sum(1 for c in state.cells if c.status == "crashed")
        summary = f"{seen.progress.cells_done}/{seen.progress.cells}" + (f" ✖{crashed}" if crashed else "")
        self.set_summary(("▶ " if seen.driving else "") + summary)
        if self.answered() and self.answer is not None:
            self._draw_answer(self.answer)
            return
        drawn = self.answer_for[0] if self.answer_for else None
        if drawn is None or drawn.id != state.id or drawn.status != state.status:
            # no answer of this campaign in this phase on screen yet: the grid as the cells hold
            # it (the comparison pools their repeats), and a line saying the answer is coming
            levels = (state.spec.get("sweep") or {}).get("levels") or []
            grid.show([{k: getattr(c, k) for k in GRID_AT_ONCE} for c in state.cells], levels)
            result.update(Text("computing the answer…", style="dim"))
            self.query_one(CampaignFrontier).show(None)
            self.query_one("#camp-legend", Static).update("")
        # else the previous answer of this campaign stays until the newer one is drawn
        if not self._answering:
            self._answering = True
            self._compute_answer()

    @work(group="campaign-answer")
    async def _compute_answer(self) -> None:
        """The answer off the UI thread (a big campaign takes about a second); a state that came
        meanwhile is answered next, so an older answer is never drawn over a newer state."""
        try:
            while self.state is not None and not self.answered():
                inputs = self._inputs()
                done = await asyncio.to_thread(answer, *inputs)
                if self._current(inputs):
                    self.answer, self.answer_for = done, inputs
                    self._draw_answer(done)
        finally:
            self._answering = False

    def _draw_answer(self, got: Answer) -> None:
        """The grid, the answer lines and the frontier, from an answer already computed."""
        state = self.state
        if state is None or not self.query("#camp-result"):
            return
        result = self.query_one("#camp-result", Static)
        comp = got.comparison
        levels = (state.spec.get("sweep") or {}).get("levels") or []
        self.query_one(CampaignGrid).show(got.grid_rows, levels)
        label, names, rest = got.verdict
        style = "bold green" if comp.winner else ("bold yellow" if comp.tie else "bold cyan")
        text = Text.assemble((label, "bold"), (clean_line(names), style), clean_line(rest))
        lead = next((r for r in comp.results if r.cell == comp.leader), None)
        if lead is not None and lead.efficiency_pct is not None:
            text.append("\n" + clean_line(f"{lead.cell}: {efficiency_text(lead)}"))
            cal = lead.calibration or {}
            if cal.get("eta"):
                text.append(f"; fitted: bandwidth efficiency {cal['eta'] * 100:.1f}%, "
                            f"{cal['overhead_ms']:.1f} ms fixed per step")
            elif lead.calibration_refused:
                text.append(clean_line(f"; no efficiency/overhead fit: {lead.calibration_refused}"))
        elif comp.roofline_note and comp.leader:
            text.append("\n" + clean_line(comp.roofline_note), style="dim")
        short = self.has_class("short")
        for line in got.slo_lines if not short else ():
            text.append("\n" + clean_line(line.strip()), style="dim")
        for r in comp.results if not short else ():   # the highest load within the SLO, per config
            if r.max_load:
                text.append("\n" + clean_line(f"{r.cell}: {load_text(r.max_load)}"), style="dim")
        for line in invalid_lines(comp):
            text.append("\n" + clean_line(line.strip()), style="yellow")
        for line in energy_summary(comp) if not short else ():
            text.append("\n" + clean_line(line), style="dim")
        if comp.conditions_note:
            text.append("\n" + clean_line(comp.conditions_note), style="yellow")
        if not short:
            text.append("\n" + clean_line(comp.method), style="dim")
        result.update(text)
        self.query_one(CampaignFrontier).show(got.frontier)
        self.query_one("#camp-legend", Static).update(frontier_legend(got.frontier, self.size.width or 100))

    def _catch_up(self, runtime) -> None:
        """Take the campaign the runtime has just read (after a start or resume) before saying
        anything about it: its CampaignChanged is still queued, and the line judged against the
        campaign shown before (finished, or stopped) went at once."""
        if runtime is self.runtime:
            self.state, self.seen = runtime.campaign, runtime.campaign_view

    def _say(self, text: str, while_running: bool = False) -> None:
        self.message, self.message_while_running = text, while_running
        self.draw()

    def action_run(self) -> None:
        if self.runtime is not None:
            self._act("run")

    def action_stop(self) -> None:
        if self.runtime is not None and self.state is not None:
            self._act("stop")

    def action_resume(self) -> None:
        if self.runtime is not None and self.state is not None:
            self._act("resume")

    def _after_quit(self, runtime) -> str:
        """What quitting the console does to the campaign: the demo's goes with its world."""
        if runtime.name in getattr(self.app, "campaigns_end_on_quit", ()):
            return "it ends when the demo is quit (q asks first)"
        return "it keeps running if the console closes"

    @work(group="campaign-action")
    async def _act(self, what: str) -> None:
        runtime = self.runtime
        try:
            if what == "run":
                campaign_id, pid = await runtime.start_campaign()
                self._catch_up(runtime)
                self._say(f"started {campaign_id} (driver pid {pid}); {self._after_quit(runtime)}",
                          while_running=True)
            elif what == "stop":
                # counted by the owner that the title reads, so the two never disagree
                done = owner.progress(self.state).runs_done
                lines = [f"{self.state.id} has measured {done} run(s) so far; stopping ends its current cell "
                         "and stops that cell's server. `R` resumes it later and redoes the cut-short cell."]
                if not await self.app.push_screen_wait(Confirm(f"Stop campaign {self.state.id}?", lines, "Stop")):
                    self._say("not stopped")
                    return
                pid = await runtime.stop_campaign(self.state.id)
                self._say(f"asked {self.state.id} (pid {pid}) to stop: it stops its server and saves")
            else:
                pid = await runtime.resume_campaign(self.state.id)
                self._catch_up(runtime)
                self._say(f"resumed {self.state.id} (driver pid {pid}); {self._after_quit(runtime)}",
                          while_running=True)
        except (CampaignError, control.ControlError, LockHeld, LookupError, ValueError, OSError) as exc:
            self._say(str(exc))
