"""The Bench tab: set up a sweep, watch it live, compare it with an earlier one.

The load generator runs as its own process (`python -m console.bench ...
--events`), owned by the host's runtime, which reads its JSON lines into a
`SweepView` and reports SweepProgress at most four times a second; this tab
draws that view. A sweep keeps running, on its host, while the operator
looks at another host.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widgets import Static

from console.bench.live import SweepView, view_from_run
from console.bench.process import sweep_argv
from console.bench.compare import compare
from console.fmt import number
from console.runtime import events as ev
from console.safe_text import safe_text
from profiles.atomic import StateFileError
from widgets.bench_chart import BenchChart, chart_legend
from widgets.bench_compare import BenchCompareTable
from widgets.bench_form import BenchForm
from widgets.bench_table import BenchLevelTable

from .confirm import Confirm
from .pane import Pane
from .throttle import Throttle

_fmt = number

DRAW_S = 0.25        # the live view's text and table, at most this often (the runtime reports up to 4/s)
CHART_RUNNING_S = 2.0  # the chart of a running sweep: one point a second, redrawn every other


class BenchPane(Pane):
    TAB_TITLE = "Bench"
    DESTRUCTIVE_ACTIONS = frozenset({"start", "stop"})
    BINDINGS = [
        Binding("r", "start", "run sweep"),
        Binding("s", "stop", "stop"),
        Binding("c", "compare", "compare"),
        # in the keys panel (?), not the footer: at 100 columns the footer has no room left for it
        Binding("t", "timeline", "timeline", show=False),
        Binding("f", "toggle_form", "setup"),
        Binding("m", "models", "models"),
        # the `gpudeck bench ...` line of the form's values; under `?` and in the palette (the footer is full at 100 columns)
        Binding("e", "equivalent", "command", show=False),
        # in a form field ctrl+u empties the whole field, wherever the cursor is
        Binding("ctrl+u", "clear_field", "clear field", priority=True),
    ]
    TYPING_ACTIONS = frozenset({"clear_field"})
    DEFAULT_CSS = """
    BenchPane { height: 1fr; }
    BenchPane #bp-head { height: auto; max-height: 3; padding: 0 1; text-style: bold; }
    BenchPane #bp-status { height: auto; padding: 0 1; color: $text-muted; }
    BenchPane #bp-error { height: auto; padding: 0 1; color: $error; display: none; }
    BenchPane #bp-note { height: auto; padding: 0 1; }
    BenchPane BenchCompareTable, BenchPane #bp-compare-head { display: none; }
    BenchPane.comparing BenchCompareTable, BenchPane.comparing #bp-compare-head { display: block; }
    BenchPane #bp-compare-head { height: auto; padding: 0 1; text-style: bold; }
    BenchPane.running BenchForm { display: none; }
    BenchPane.hide-form BenchForm { display: none; }
    BenchPane.short BenchChart { display: none; }
    BenchPane.short.hide-form BenchChart, BenchPane.short.running BenchChart { display: block; }
    BenchPane #bp-legend { height: auto; padding: 0 1; display: none; }
    BenchPane.comparing #bp-legend { display: block; }
    BenchPane.short.comparing #bp-legend { display: none; }
    BenchPane.short.comparing.hide-form #bp-legend, BenchPane.short.comparing.running #bp-legend { display: block; }
    """

    RUNTIME_PARTS = {"gpus": False, "servers": False, "watch": False}

    # the sweep on screen (the runtime's live one, or a saved run); every change redraws
    view: reactive[SweepView] = reactive(SweepView, always_update=True, init=False)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.overlay: tuple[str, list[float], list] | None = None
        self.launcher: Callable[[dict, str, bool], list[str]] = sweep_argv
        self.status_note = ""
        self._last_measured: SweepView | None = None  # the last view with a level that ran
        self.form_toggled = False  # the operator chose with f whether the setup shows
        self._draws = Throttle(self, self._draw_view, DRAW_S)
        self._chart = Throttle(self, self._draw_chart, 0.0)
        self._charted: tuple | None = None  # what the chart shows now
        self._live = False
        self._note_run: str | None | bool = False  # whose level the note under the table is about (False: no note)

    # Below this height the setup, the chart and the level table do not fit together: a pane that
    # shows a run hides the setup until f (then the chart gives way), so the table stays whole.
    SHORT = 34

    def on_resize(self, event) -> None:
        self.set_class(event.size.height < self.SHORT, "short")
        self._fit()

    def _fit(self) -> None:
        if not self.form_toggled:
            self.set_class(self.has_class("short") and bool(self.view.levels), "hide-form")

    def compose(self) -> ComposeResult:
        yield Static("no sweep yet: fill in the setup and press Start", id="bp-head", markup=False)
        # under the headline, above the setup and the table: a refused value or an unreachable
        # server is on screen at 100x30 whatever the table below takes (it was below the table)
        yield Static("", id="bp-error", markup=False)
        yield BenchForm()
        yield Static("", id="bp-legend")  # which line is which run, when two are drawn; shown with the chart
        yield BenchChart()
        yield BenchLevelTable()
        yield Static("", id="bp-compare-head", markup=False)  # which run is A and which is B
        yield BenchCompareTable()
        yield Static("", id="bp-note", markup=False)
        yield Static("", id="bp-status", markup=False)

    @property
    def proc(self):
        """The running sweep's process (owned by the runtime), or None."""
        return self.runtime.sweep_proc if self.runtime else None

    async def set_session(self, session) -> None:
        await super().set_session(session)
        runtime = self.runtime
        session = runtime.session
        form = self.query_one(BenchForm)
        url = await runtime.bench_url()
        if runtime is not self.runtime:
            return  # the operator switched host again meanwhile
        form.reset()   # this host's settings only, never the last host's
        form.set_url(url)
        bench = session.profile.bench
        form.set_defaults({"levels": bench.concurrency, "input_len": bench.input_len,
                           "output_len": bench.output_len, "num_prompts": bench.num_prompts})
        form.set_defaults(await runtime.bench_form())  # the last settings win
        self.overlay = None
        self._last_measured = None
        self.remove_class("comparing")
        self._error(runtime.sweep_error or "")
        if runtime.sweep_view is not None:  # this host's sweep, running or just finished
            self.view = runtime.sweep_view
        else:
            self.view = SweepView()
            try:
                saved = await runtime.latest_saved_view()
            except StateFileError as exc:
                saved = None
                self._error(str(exc))
            if runtime is not self.runtime:
                return
            if saved is not None:
                self.view = saved
                self._last_measured = saved
        if form.values()["url"]:
            self.action_models(asked=False)

    # -- actions ----------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "stop" and self.proc is None and not self.readonly:
            return None
        if action == "clear_field":
            from textual.widgets import Input

            return isinstance(self.app.focused, Input) and self.app.focused in self.query(Input)
        return super().check_action(action, parameters)

    def action_toggle_form(self) -> None:
        self.form_toggled = True
        self.toggle_class("hide-form")
        # a hidden form must not keep the focus: the keys (f r c …) would go nowhere
        self.query_one(BenchLevelTable).focus()
        self.refresh_bindings()

    def action_clear_field(self) -> None:
        from textual.widgets import Input

        if isinstance(self.app.focused, Input):
            self.app.focused.value = ""
    def action_models(self, asked: bool = True) -> None:
        """`m`: the model list asked again; `asked` is False when the tab asks by itself."""
        url = self.query_one(BenchForm).values()["url"]
        if url:
            self.run_worker(self._load_models(url, asked), group="bench-models", exclusive=True)

    async def _load_models(self, url: str, asked: bool = False) -> None:
        try:
            models = await self.runtime.list_models(url)
        except Exception as exc:  # noqa: BLE001 - a tunnel that can't open is shown, not raised
            self._error(f"cannot reach {url} through the SSH tunnel: {exc}")
            return
        before = self.query_one(BenchForm).values()["model"]
        self.query_one(BenchForm).set_models(models)
        after = self.query_one(BenchForm).values()["model"]
        if asked and models and after == before:
            # the field did not change: say so, or `m` looks like it did nothing
            self.notify(safe_text(f"model already filled in: {after} ({len(models)} listed at {url})"),
                        timeout=4)
        elif asked and after:
            self.notify(safe_text(f"model set to {after}"), timeout=4)
        if models:
            self._error("")  # an earlier "no models listed" is no longer true
        else:
            self._error(f"no models listed at {url}/v1/models (is the server up? m asks again; "
                        "a server turning ready is asked by itself)")

    def action_equivalent(self) -> None:
        """The `gpudeck bench ...` line that runs the sweep the form holds now, copyable."""
        import shlex

        from console.bench.process import cli_argv

        from .equivalent import Equivalent

        name = self.session.name if self.session else "local"
        values = self.query_one(BenchForm).values()
        if not values.get("url"):
            self._error("server URL is empty")
            return
        self.app.push_screen(Equivalent("This sweep from the command line",
                                        [("the same from the command line", shlex.join(cli_argv(values, name)))],
                                        name))

    def action_start(self) -> None:
        self.query_one(BenchForm).post_message(BenchForm.Submitted(self.query_one(BenchForm).values()))

    def on_bench_form_submitted(self, message: BenchForm.Submitted) -> None:
        if self.readonly:
            self._error("read-only: sweeps cannot be started")
            return
        if self.proc is not None:
            self._error("a sweep is already running: stop it first (s)")
            return
        if not message.values.get("url"):
            self._error("server URL is empty")
            return
        self.run_worker(self._check_then_start(message.values), group="bench", exclusive=True)

    async def _check_then_start(self, values: dict) -> None:
        """Remember the form, and ask first when the sweep goes beyond every run before on this host."""
        name = self.session.name if self.session else "local"
        await self.runtime.remember_bench_form(values)
        bigger = None if values.get("request_rate") else \
            await self.runtime.larger_sweep_than_before(values["levels"])
        if bigger is None:
            await self._start(values)
            return

        def answer(yes: bool | None) -> None:
            if yes:
                self.run_worker(self._start(values), group="bench", exclusive=True)

        new, before = bigger
        was = f"the largest run before on {name} was {before} streams" if before else f"no sweep has run on {name} yet"
        self.app.push_screen(Confirm(f"Run a sweep up to {new} streams?", [
            f"This is larger than any sweep before: {was}.", f"Levels: {values['levels']}"], "Run"), answer)

    def action_stop(self) -> None:
        if self.proc is None:
            return

        def answer(yes: bool | None) -> None:
            if yes and self.runtime is not None and self.runtime.stop_sweep():
                self.status_note = "stopping: the current level is finishing its records…"
                # drawn now: the sweep's next report may be a second or more away
                self._draws.request()
                self._draws.flush()

        done = self.view.finished_levels   # as the tab title counts them
        self.app.push_screen(Confirm("Stop the sweep?", [
            f"{done} of {len(self.view.levels)} levels finished; the running level is cut short and "
            "the remaining levels are skipped.", "What was measured so far is saved."], "Stop"), answer)

    def action_compare(self) -> None:
        if self.session is not None:
            self.run_worker(self._pick_earlier(), group="bench-compare", exclusive=True)

    def action_timeline(self) -> None:
        """The timeline of the run on screen once it has ended; with none on screen (or one still running),
        a saved run to pick."""
        if self.session is not None:
            self.run_worker(self._timeline(), group="bench-timeline", exclusive=True)

    async def _timeline(self) -> None:
        v = self.view
        if v.path and not v.running:
            await self.show_timeline(v.path, v.run_id or "")
            return
        runs = [r for r in await self.runtime.saved_runs() if r["run_id"] != v.run_id or not v.running]
        if not runs:
            self._error("no saved run to show the timeline of")
            return
        from .bench_pick_run import PickRun

        by_path = {r["path"]: r.get("run_id") or "" for r in runs}

        def picked(path: str | None) -> None:
            if path:
                self.run_worker(self.show_timeline(path, by_path.get(path, "")), group="bench-timeline",
                                exclusive=True)
        self.app.push_screen(PickRun(runs, "Timeline of which run?"), picked)

    async def show_timeline(self, path: str, run_id: str) -> None:
        from .bench_timeline import TimelineScreen

        try:
            data = await self.runtime.saved_timeline(path, run_id)
        except StateFileError as exc:
            self._error(str(exc))
            return
        if data is None:
            self._error(f"{run_id or path}: no timeline recorded (a run from before timelines)")
            return
        self.app.push_screen(TimelineScreen(data))

    async def _pick_earlier(self) -> None:
        runs = [r for r in await self.runtime.saved_runs() if r["run_id"] != self.view.run_id]
        if not runs:
            self._error("no earlier run of this profile to compare with")
            return
        from .bench_pick_run import PickRun

        self.app.push_screen(PickRun(runs), self.compare_with)

    def compare_with(self, path: str | None) -> None:
        """Overlay an earlier run and show the differences, level by level."""
        if path:
            self.run_worker(self._compare(path), group="bench-compare", exclusive=True)

    async def _compare(self, path: str) -> None:
        try:
            base = await self.runtime.saved_run(path)
            current = await self.runtime.saved_run(self.view.path) if self.view.path else None
        except StateFileError as exc:
            self._error(str(exc))
            return
        if current is None:
            self._error("this run is not saved yet")
            return
        earlier = view_from_run(base)
        self.overlay = (base.get("run_id") or "earlier", earlier.series, earlier.boundaries)
        # A is the run that started first, as `gpudeck bench --compare` reads them, whichever is on screen
        profile = self.session.name if self.session else None
        doc = await asyncio.to_thread(compare, base, current, profile)
        self.query_one("#bp-compare-head", Static).update(safe_text(
            f"A {doc['a']} → B {doc['b']}: each change is B against A · ≈ within noise (its 95% interval holds 0)"))
        self.query_one(BenchCompareTable).show(doc["levels"])
        self.add_class("comparing")
        self._redraw()

    # -- the load generator (run by the host's runtime) --------------------------
    async def _start(self, values: dict) -> None:
        self._error("")
        self.overlay = None
        self.remove_class("comparing")
        self.status_note = ""
        try:
            await self.runtime.start_sweep(values, self.launcher)
        except RuntimeError as exc:
            self._error(str(exc))
            return
        self.query_one(BenchLevelTable).focus()  # the form is hidden now; keys go to the pane

    def runtime_event(self, event: ev.RuntimeEvent) -> None:
        if isinstance(event, ev.SweepProgress):
            if event.error:
                self._error(event.error)
            view = event.view
            measured = any(level.completed or level.failed for level in view.levels)
            if not view.running and not measured and self._last_measured is not None:
                # a sweep that never ran a level (its pre-flight lost to a link drop, say): the
                # result on screen was not replaced by anything, so it stays, and the error says why
                why = event.error or (view.errors[-1] if view.errors else "no level ran")
                self._error(f"the new sweep did not start ({why}); the result shown is the earlier one")
                self.view = self._last_measured
                return
            if measured:
                self._last_measured = view
            self._live = True  # a progress report: drawn at the throttle's pace
            try:
                self.view = view
            finally:
                self._live = False
        elif isinstance(event, ev.ServerStateChanged) and event.record.state == "ready" \
                and self._error_text.startswith("no models listed"):
            self.action_models(asked=False)  # a server came up since the last look: its models, not a stale "none"

    def watch_view(self) -> None:
        self.set_summary(self.view.summary_text())  # the tab title counts levels whichever tab is shown
        self._draws.request()
        if not self._live or (self.proc is not None) != self.has_class("running"):
            self._draws.flush()  # a run opened, or a sweep that starts or ends: shown at once

    def on_show(self) -> None:
        # the tab first appears as it was left, at once; what changed meanwhile follows a frame later
        self.call_after_refresh(self._catch_up)

    def _catch_up(self) -> None:
        self._draws.flush()
        self._chart.flush()

    def _draw_view(self) -> None:
        self.set_class(self.proc is not None, "running")
        self._fit()
        self.refresh_bindings()
        self._redraw()

    # -- drawing ----------------------------------------------------------------
    _error_text = ""

    def _error(self, text: str) -> None:
        self._error_text = text
        error = self.query_one("#bp-error", Static)
        error.update(safe_text(text, newlines=True))  # server and host errors
        error.display = bool(text)  # no blank line above the setup when all is well

    def on_data_table_row_selected(self, event) -> None:
        """Enter on a level: its whole note, wrapped, under the table (the column cuts it short)."""
        if not isinstance(event.data_table, BenchLevelTable):
            return
        try:
            level = self.view.levels[int(event.row_key.value)]
        except (ValueError, IndexError, TypeError):
            return
        note = level.explanation or "no note"
        self.query_one("#bp-note", Static).update(safe_text(f"{level.label or f'c={level.concurrency}'}: {note}",
                                                            newlines=True))
        self._note_run = self.view.run_id

    def _redraw(self) -> None:
        v = self.view
        if self._note_run is not False and self._note_run != v.run_id:   # a new sweep, or another host's run
            self.query_one("#bp-note", Static).update("")
            self._note_run = False
        _update(self.query_one("#bp-head", Static), safe_text(self._headline(v)))
        charted = (tuple(v.series), tuple(v.boundaries), self.overlay and self.overlay[0], v.run_id)
        if charted != self._charted:
            self._chart.interval = CHART_RUNNING_S if v.running else 0.0
            self._chart.request()
        if not v.running:
            self._chart.flush()  # the finished run's whole chart, not the one of two seconds ago
        self.query_one(BenchLevelTable).show(v.levels)
        _update(self.query_one("#bp-status", Static), safe_text(self._status(v)))
        self.set_summary(v.summary_text())

    def _draw_chart(self) -> None:
        v = self.view
        self._charted = (tuple(v.series), tuple(v.boundaries), self.overlay and self.overlay[0], v.run_id)
        self.query_one(BenchChart).show(v.series, v.boundaries, self.overlay)
        self.query_one("#bp-legend", Static).update(chart_legend(v.run_id or "this run",
                                                                 self.overlay[0] if self.overlay else None))

    @staticmethod
    def _headline(v: SweepView) -> str:
        if not v.run_id and not v.levels:
            return "no sweep yet: fill in the setup and press Start (r)"
        w = v.workload or {}
        approx = " (approx.)" if w.get("input_len_method") == "approximate" else ""
        return (f"{v.run_id or 'run'} · {v.url}{' via ssh tunnel' if v.tunnelled else ''} · "
                f"{v.model or 'model N/A'} · in {w.get('input_len', '?')}{approx} / out "
                f"{w.get('output_len', '?')} · ignore_eos" + ("" if v.running else "  (finished)"))

    def _status(self, v: SweepView) -> str:
        if v.running:
            parts = [f"client lag {_fmt(v.lag_ms)} ms (max {_fmt(v.lag_max_ms)})"]
        else:
            parts = [f"client lag p99 {_fmt(v.lag_max_ms)} ms"]
        s = v.server if v.running else None  # the server's live gauges end with the sweep
        if s:
            kv = s.get("kv_cache")
            parts.append(f"server: gen {_fmt(s.get('gen_tps'))} tok/s · running {_fmt(s.get('running'), 0)} · "
                         f"queued {_fmt(s.get('queued'), 0)} · KV {_fmt(None if kv is None else kv * 100, 0, '%')}")
        elif v.running:
            parts.append("server metrics: N/A (no Prometheus /metrics)")
        if self.status_note and v.running:
            parts.append(self.status_note)
        if v.errors:
            parts.append(v.errors[-1])
        if not v.running and v.path:
            parts.append(f"saved {v.path.rsplit('/', 1)[-1]}")
        return " · ".join(parts)


def _update(static: Static, text) -> None:
    """Set a line's text; the same text again costs no layout."""
    if getattr(static, "_shown_text", None) != text:
        static._shown_text = text
        static.update(text)
