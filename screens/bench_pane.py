"""The Bench tab: set up a sweep, watch it live, compare it with an earlier one.

The load generator runs as its own process (`python -m console.bench ...
--events`); a Textual worker reads its JSON lines into a `SweepView` and the
screen is redrawn from that view four times a second at most, so 512
streams never reach the UI's event loop.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from console.bench.endpoint import list_models, loopback_port, running_server_url, with_port
from console.bench.process import SweepProcess, sweep_argv
from console.bench.live import SweepView, view_from_run
from console.bench.results import compare_runs, list_runs, load_run
from profiles.atomic import StateFileError
from widgets.bench_chart import BenchChart
from widgets.bench_compare import BenchCompareTable
from widgets.bench_form import BenchForm
from widgets.bench_table import BenchLevelTable

from .confirm import Confirm
from .pane import Pane

REDRAW_S = 0.25


def _fmt(value: Any, digits: int = 1, suffix: str = "") -> str:
    return "N/A" if value is None else f"{value:,.{digits}f}{suffix}"


class BenchPane(Pane):
    TAB_TITLE = "Bench"
    DESTRUCTIVE_ACTIONS = frozenset({"start", "stop"})
    BINDINGS = [
        Binding("r", "start", "run sweep"),
        Binding("s", "stop", "stop"),
        Binding("c", "compare", "compare with…"),
        Binding("f", "toggle_form", "setup"),
        Binding("m", "models", "models"),
        # in a form field ctrl+u empties the whole field, wherever the cursor is
        Binding("ctrl+u", "clear_field", "clear field", priority=True),
    ]
    DEFAULT_CSS = """
    BenchPane { height: 1fr; }
    BenchPane #bp-head { height: auto; max-height: 3; padding: 0 1; text-style: bold; }
    BenchPane #bp-status { height: auto; padding: 0 1; color: $text-muted; }
    BenchPane #bp-error { height: auto; padding: 0 1; color: $error; }
    BenchPane BenchCompareTable { display: none; }
    BenchPane.comparing BenchCompareTable { display: block; }
    BenchPane.running BenchForm { display: none; }
    BenchPane.hide-form BenchForm { display: none; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.view = SweepView()
        self.overlay: tuple[str, list[float], list] | None = None
        self.proc: SweepProcess | None = None
        self.launcher: Callable[[dict, str, bool], list[str]] = sweep_argv
        self._dirty = False

    def compose(self) -> ComposeResult:
        yield Static("no sweep yet: fill in the setup and press Start", id="bp-head", markup=False)
        yield BenchForm()
        yield BenchChart()
        yield BenchLevelTable()
        yield BenchCompareTable()
        yield Static("", id="bp-status", markup=False)
        yield Static("", id="bp-error", markup=False)

    def on_mount(self) -> None:
        self.set_interval(REDRAW_S, self._redraw_if_dirty)

    async def set_session(self, session) -> None:
        await super().set_session(session)
        form = self.query_one(BenchForm)
        form.set_url(session.profile.server.url or running_server_url(session.name))
        bench = session.profile.bench
        form.set_defaults({"levels": bench.concurrency, "input_len": bench.input_len,
                           "output_len": bench.output_len, "num_prompts": bench.num_prompts})
        if self.proc is None:
            runs = list_runs(session.name)
            if runs:
                try:
                    self.view = view_from_run(load_run(runs[0]["path"]))
                except StateFileError as exc:
                    self._error(str(exc))
            else:
                self.view = SweepView()
            self._redraw()
        if form.values()["url"]:
            self.action_models()

    # -- actions ----------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "stop" and self.proc is None and not self.readonly:
            return None
        if action == "clear_field":
            from textual.widgets import Input

            return isinstance(self.app.focused, Input) and self.app.focused in self.query(Input)
        return super().check_action(action, parameters)

    def action_toggle_form(self) -> None:
        self.toggle_class("hide-form")
        # a hidden form must not keep the focus: the keys (f r c …) would go nowhere
        self.query_one(BenchLevelTable).focus()
        self.refresh_bindings()

    def action_clear_field(self) -> None:
        from textual.widgets import Input

        if isinstance(self.app.focused, Input):
            self.app.focused.value = ""
    def action_models(self) -> None:
        url = self.query_one(BenchForm).values()["url"]
        if url:
            self.run_worker(self._load_models(url), group="bench-models", exclusive=True)

    async def _load_models(self, url: str) -> None:
        local = await self._reachable_url(url)
        models = await list_models(local[0])
        self.query_one(BenchForm).set_models(models)
        if not models:
            self._error(f"no models listed at {url}/v1/models (is the server up?)")

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
            self._error("endpoint is empty")
            return
        self.run_worker(self._run(message.values), group="bench", exclusive=True)

    def action_stop(self) -> None:
        if self.proc is None:
            return

        def answer(yes: bool | None) -> None:
            if yes and self.proc is not None:
                self.proc.stop()
                self._status_note = "stopping: the current level is finishing its records…"

        done = sum(1 for lv in self.view.levels if lv.status in ("ok", "partial", "failed"))
        self.app.push_screen(Confirm("Stop the sweep?", [
            f"{done} of {len(self.view.levels)} levels finished; the running level is cut short and "
            "the remaining levels are skipped.", "What was measured so far is saved."], "Stop"), answer)

    def action_compare(self) -> None:
        if self.session is None:
            return
        runs = [r for r in list_runs(self.session.name) if r["run_id"] != self.view.run_id]
        if not runs:
            self._error("no earlier run of this profile to compare with")
            return
        from .bench_pick_run import PickRun

        self.app.push_screen(PickRun(runs), self.compare_with)

    def compare_with(self, path: str | None) -> None:
        """Overlay an earlier run and show the differences, level by level."""
        if not path:
            return
        try:
            base = load_run(path)
            current = load_run(self.view.path) if self.view.path else None
        except StateFileError as exc:
            self._error(str(exc))
            return
        if current is None:
            self._error("this run is not saved yet")
            return
        earlier = view_from_run(base)
        self.overlay = (base.get("run_id") or "earlier", earlier.series, earlier.boundaries)
        self.query_one(BenchCompareTable).show(compare_runs(base, current))
        self.add_class("comparing")
        self._redraw()

    # -- the load generator -----------------------------------------------------
    async def _reachable_url(self, url: str) -> tuple[str, bool]:
        """A URL this machine can reach: through the profile's SSH tunnel for a remote loopback."""
        host = self.session.host if self.session else None
        port = loopback_port(url)
        if host is None or not host.tunnelled or port is None:
            return url, False
        local_port = await host.forward_port(port)
        return with_port(url, local_port), True

    async def _run(self, values: dict) -> None:
        self._error("")
        try:
            url, tunnelled = await self._reachable_url(values["url"])
        except Exception as exc:  # noqa: BLE001 - a tunnel that can't open is shown, not raised
            self._error(f"cannot reach {values['url']} through the SSH tunnel: {exc}")
            return
        argv = self.launcher({**values, "url": url, "server_port": loopback_port(values["url"])},
                             self.session.name if self.session else "local", tunnelled)
        self.view = SweepView()
        self.overlay = None
        self.remove_class("comparing")
        self._status_note = ""
        self.proc = SweepProcess(argv)
        try:
            await self.proc.start()
        except OSError as exc:
            self.proc = None
            self._error(f"cannot start the load generator: {exc}")
            return
        self.add_class("running")
        self.query_one(BenchLevelTable).focus()  # the form is hidden now; keys go to the pane
        self.refresh_bindings()
        try:
            async for event in self.proc.events():
                self.view.apply(event)
                self._dirty = True
                if event["event"] == "level-start" and self.session is not None:
                    # the Server tab tags a crash record with the sweep that was running
                    self.session.extra["running_sweep"] = f"{self.view.run_id} level {event.get('concurrency')}"
                    self.session.extra.pop("sweep_ended_at", None)
            code, stderr = await self.proc.finish()
            if code not in (0, 3) or (stderr and not self.view.levels):
                self._error(stderr.splitlines()[-1] if stderr else f"load generator exited {code}")
        finally:
            await self.proc.close()
            if self.session is not None:
                # kept a little while: the crash that ended the sweep is seen a poll later
                self.session.extra["sweep_ended_at"] = time.time()
            self.proc = None
            self.view.running = False
            self.remove_class("running")
            self.refresh_bindings()
            self._redraw()

    # -- drawing ----------------------------------------------------------------
    _status_note = ""

    def _error(self, text: str) -> None:
        self.query_one("#bp-error", Static).update(text)

    def _redraw_if_dirty(self) -> None:
        if self._dirty:
            self._redraw()

    def _redraw(self) -> None:
        self._dirty = False
        v = self.view
        self.query_one("#bp-head", Static).update(self._headline(v))
        self.query_one(BenchChart).show(v.series, v.boundaries, self.overlay, label=v.run_id or "this run")
        self.query_one(BenchLevelTable).show(v.levels)
        self.query_one("#bp-status", Static).update(self._status(v))
        self.set_summary(v.summary_text())

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
        s = v.server
        if s:
            kv = s.get("kv_cache")
            parts.append(f"server: gen {_fmt(s.get('gen_tps'))} tok/s · running {_fmt(s.get('running'), 0)} · "
                         f"queued {_fmt(s.get('queued'), 0)} · KV {_fmt(None if kv is None else kv * 100, 0, '%')}")
        elif v.running:
            parts.append("server metrics: N/A (no Prometheus /metrics)")
        if self._status_note and v.running:
            parts.append(self._status_note)
        if v.errors:
            parts.append(v.errors[-1])
        if not v.running and v.path:
            parts.append(f"saved {v.path.rsplit('/', 1)[-1]}")
        return " · ".join(parts)
