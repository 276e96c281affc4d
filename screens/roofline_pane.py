"""The Roofline tab: the ceiling for this profile's model on its GPUs, beside every measured run."""
from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Static

from console.roofline.compare import calibration_text, headline, rows
from console.roofline.checkpoint_source import checkpoint_for_profile
from console.roofline.from_profile import Inputs, inputs_from_profile
from console.roofline.runs import RunsFound
from console.runtime import events as ev
from console.store.runs import CONFIG_UNKNOWN
from console.runtime.host_runtime import roofline_or_error
from console.fmt import UNKNOWN
from console.safe_text import clean_line, safe_text
from widgets.roofline_headline import RooflineHeadline
from widgets.roofline_plot import RooflinePlot
from widgets.roofline_table import RooflineTable
from widgets.roofline_whatif import WhatIf

from .pane import Pane

_INT_FIELDS = ("count", "tp", "ep", "context")
_KNOB_FIELDS = ("allreduce_alpha_us", "allreduce_beta_gbs", "mem_efficiency", "step_overhead_us")


class RooflinePane(Pane):
    TAB_TITLE = "Roofline"
    BINDINGS = [
        Binding("w", "toggle_whatif", "what-if"),
        Binding("r", "reload", "reload"),
        Binding("z", "reset", "reset what-if"),
        Binding("p", "pick_run", "pick run"),
        # the tab scrolls when it does not fit (a 100x30 terminal); in a what-if field these keys edit
        Binding("pagedown", "page(1)", "page down", show=False, priority=True),
        Binding("pageup", "page(-1)", "page up", show=False, priority=True),
        Binding("end", "edge(1)", "bottom", show=False, priority=True),
        Binding("home", "edge(-1)", "top", show=False, priority=True),
    ]
    DEFAULT_CSS = """
    RooflinePane { height: 1fr; overflow-y: auto; }
    RooflinePane #rl-body { height: 1fr; min-height: 14; }  /* what the screen leaves; the tab scrolls below that */
    RooflinePane.narrow #rl-body { height: auto; min-height: 0; }
    RooflinePane #rl-assumptions { height: auto; color: $text-muted; padding: 0 1; }
    RooflinePane #rl-status { height: 1; padding: 0 1; color: $error; }
    RooflinePane #rl-run { height: auto; padding: 0 1; }
    RooflinePane #rl-calibration { height: auto; max-height: 6; padding: 0 1; }  /* whole in a 100-column split */
    RooflinePane RooflineTable { width: auto; max-width: 100%; }
    RooflinePane RooflinePlot { width: 1fr; min-width: 40; height: 1fr; }
    RooflinePane.narrow RooflinePlot { display: none; }
    RooflinePane WhatIf { display: none; }
    RooflinePane.whatif WhatIf { display: block; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base_inputs = Inputs()
        self.inputs = Inputs()
        self.runs = RunsFound([], [])
        self.chosen: str | None = None   # the run the operator picked (its path); None: the newest measured
        self.roof = None
        self.checkpoint = None           # the launch script's checkpoint headers, once read on the host
        self.facts_read = False          # a roofline was worked out for this host: its model's facts are cached

    def compose(self) -> ComposeResult:
        yield RooflineHeadline()
        yield Static("", id="rl-run", markup=False)  # which run the efficiency reads, and why that one
        with Horizontal(id="rl-body"):
            yield RooflineTable()
            yield RooflinePlot()
        yield Static("", id="rl-calibration", markup=False)
        yield Static("", id="rl-assumptions", markup=False)
        yield Static("", id="rl-status", markup=False)
        yield WhatIf()

    async def set_session(self, session) -> None:
        await super().set_session(session)
        self.base_inputs = inputs_from_profile(self.session.profile)
        self.inputs = self.base_inputs
        self.checkpoint = None
        self.chosen = None
        session = self.session
        runs = await self.runtime.measured_runs()
        if session is not self.session:
            return  # the operator switched host again meanwhile
        self.runs = runs
        self._fill_whatif()
        self.facts_read = False
        # not awaited here: the app awaits set_session while it starts or switches hosts, and a slow
        # read of the model's config and checkpoint headers would hold every key (q included) meanwhile
        self.run_worker(self._compute(session, then_checkpoint=True), group="rl-compute", exclusive=True)

    async def _compute(self, session, then_checkpoint: bool = False) -> None:
        """Work out the roofline off the UI thread (the config, the checkpoint headers beside it and
        hundreds of quantisation patterns take a moment), then draw it."""
        inputs, checkpoint = self.inputs, self.checkpoint
        result = await self.runtime.roofline_of(inputs, checkpoint)
        if session is not self.session or inputs is not self.inputs or checkpoint is not self.checkpoint:
            return  # another host, or a what-if, came meanwhile and drew its own
        self.facts_read = True
        self._show(result)
        if then_checkpoint:
            self.run_worker(self._read_checkpoint(session), group="rl-checkpoint", exclusive=True)

    async def _read_checkpoint(self, session) -> None:
        """The launch script's model directory, read on the host: its headers then witness the config."""
        if getattr(session, "simulated", False):
            return
        headers, _why = await checkpoint_for_profile(session)
        if session is self.session and headers is not None:
            self.checkpoint = headers
            self.run_worker(self._compute(session), group="rl-compute", exclusive=True)

    # below this width the chart would squeeze the table: the table (all the numbers) stays, the chart goes
    NARROW = 130

    def on_resize(self, event) -> None:
        self.set_class(event.size.width < self.NARROW, "narrow")

    def runtime_event(self, event: ev.RuntimeEvent) -> None:
        if isinstance(event, ev.RunSaved):  # a sweep saved a level: its efficiency shows by itself
            self.action_reload()

    # -- actions ---------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("page", "edge"):
            from textual.widgets import Input

            return not isinstance(self.app.focused, Input)  # Home and End move the cursor in a field
        return super().check_action(action, parameters)

    def action_page(self, direction: int) -> None:
        self.scroll_relative(y=direction * max(1, self.size.height - 2), animate=False)

    def action_edge(self, direction: int) -> None:
        (self.scroll_end if direction > 0 else self.scroll_home)(animate=False)

    def action_toggle_whatif(self) -> None:
        self.toggle_class("whatif")
        if self.has_class("whatif"):
            self._fill_whatif()
            field = self.query_one("#wi-gpu")
            field.focus()
            self.call_after_refresh(self.scroll_to_widget, self.query_one(WhatIf), animate=False)
        else:
            self.focus_body()

    def action_reload(self) -> None:
        if self.session is not None:
            self.run_worker(self._reload(self.session), group="rl-runs", exclusive=True)

    async def _reload(self, session) -> None:
        runs = await self.runtime.measured_runs()
        if session is self.session:
            self.runs = runs
            self.recompute()

    def action_pick_run(self) -> None:
        """Read the efficiency against another measured run than the newest one."""
        if not self.runs.runs:
            self.query_one("#rl-status", Static).update("no measured run to pick")
            return
        from .bench_pick_run import PickRun

        listed = [r.summary for r in reversed(self.runs.runs)]   # as the Bench tab's picker lists them

        def picked(path: str | None) -> None:
            if path:
                self.chosen = path
                self.recompute()
        self.app.push_screen(PickRun(listed, "Read efficiency against which run?"), picked)

    def shown_run(self):
        """The picked run while it is still on disk, else the newest run that measured something."""
        return self.runs.compared(self.chosen)

    def action_reset(self) -> None:
        self.inputs = self.base_inputs
        self._fill_whatif()
        self.recompute()

    def on_what_if_changed(self, event: WhatIf.Changed) -> None:
        try:
            self.inputs = _inputs_from_form(self.base_inputs, event.values)
        except ValueError as exc:
            self.query_one("#rl-status", Static).update(safe_text(f"what-if: {exc}"))
            return
        self.recompute()

    # -- drawing ---------------------------------------------------------------
    def recompute(self) -> None:
        if self.facts_read:  # the model's facts are cached after the first: what-if keys stay quick
            self._show(roofline_or_error(self.inputs, self.checkpoint))
        elif self.session is not None:  # the config and its checkpoint are still being read: not here
            self.run_worker(self._compute(self.session, then_checkpoint=True), group="rl-compute", exclusive=True)

    def _show(self, result) -> None:
        """Draw a computed roofline, or the reason there is none."""
        status = self.query_one("#rl-status", Static)
        run = self.shown_run()
        if isinstance(result, Exception):
            exc = result
            self.roof = None
            self.query_one(RooflineHeadline).show(None, self._setup_line(None), problem=str(exc))
            self.query_one(RooflineTable).show([])
            self.query_one(RooflinePlot).show([], [], [], [])
            self.query_one("#rl-assumptions", Static).update("")
            self.query_one("#rl-calibration", Static).update("")
            status.update("")
            self.set_summary("N/A")
            return
        roof = self.roof = result
        self.query_one("#rl-run", Static).update(run_line(run, picked=self.chosen is not None
                                                            and run is not None and str(run.path) == self.chosen))
        head = headline(roof, run)
        self.query_one(RooflineHeadline).show(head, self._setup_line(roof))
        cal, cal_line = calibration_text(roof, run)
        self.query_one("#rl-calibration", Static).update(cal_line)
        table_rows = rows(roof, run, cal)
        self.query_one(RooflineTable).show(table_rows)
        batches = [r.batch for r in table_rows]
        runs = [(r.name, [(lv.concurrency, lv.tok_s) for lv in r.levels if lv.tok_s is not None]) for r in self.runs.runs]
        self.query_one(RooflinePlot).show(batches, [r.ideal_tok_s for r in table_rows],
                                          [r.realistic_tok_s for r in table_rows], runs)
        self.query_one("#rl-assumptions", Static).update(safe_text(_assumption_line(roof.assumptions())))
        notes = []
        if self.inputs != self.base_inputs:
            notes.append("what-if values differ from the profile (z resets)")
        if self.runs.unreadable:
            path, why = self.runs.unreadable[-1]
            notes.append(f"{len(self.runs.unreadable)} run file(s) unreadable, e.g. {path.name}: {why}")
        status.update(safe_text(" · ".join(notes)))  # names unreadable run files and why
        if head.efficiency_pct is not None:
            self.set_summary(f"{head.efficiency_pct:.1f}%")
        else:
            self.set_summary(f"≤{head.ideal_tok_s:.0f}/s")

    def _setup_line(self, roof) -> str:
        if roof is None:
            return "w what-if · r reload"
        s = roof.setup
        f = s.facts
        line = (f"{f.name} · {f.total_params / 1e9:.1f}B total, {f.active_params / 1e9:.1f}B active · "
                f"{s.count} × {s.gpu.name} ({s.gpu.bandwidth_gbs / 1000:.2f} TB/s each, {s.gpu.interconnect}) · "
                f"TP{s.tp}{f' EP{s.ep}' if s.ep > 1 else ''} · ctx {s.context}")
        if not self.runs.runs:
            line += " · no measured run yet"
        return line

    def _fill_whatif(self) -> None:
        i = self.inputs
        values: dict[str, Any] = {"gpu": i.gpu, "count": i.count, "tp": i.tp, "ep": i.ep, "quant": i.quant,
                                  "kv_dtype": i.kv_dtype, "context": i.context}
        values.update({k: i.assumptions.get(k) for k in _KNOB_FIELDS})
        self.query_one(WhatIf).fill(values)


def run_line(run, picked: bool) -> Text:
    """The run the efficiency reads: its id (when it started), the server it measured and its levels,
    why this one (picked and kept through new runs, or the newest that measured), and a run still in
    progress said loudly. One line at 100 columns; the model is on the setup line above."""
    if run is None:
        return Text("")
    s = run.summary or {}
    levels = ",".join(str(c) for c in s.get("levels") or [])
    config = s.get("config")
    text = Text.assemble(("reads ", "dim"), (clean_line(run.name), "bold"),  # its id holds when it started
                         clean_line(f" · {f'config {config}' if config else CONFIG_UNKNOWN}"
                                    f" · {s.get('url') or UNKNOWN} · levels {levels or UNKNOWN}"))
    text.append(" · picked, kept (p: another)" if picked else " · newest measured (p pins another)", style="dim")
    if s.get("status") == "running":
        text.append("\n▶ this run is still in progress: its figures move as its levels finish", style="bold yellow")
    return text


def _inputs_from_form(base: Inputs, values: dict[str, str]) -> Inputs:
    """Form text to Inputs: empty means 'as the profile / catalogue says'."""
    changes: dict[str, Any] = {}
    for key in ("gpu", "quant", "kv_dtype"):
        changes[key] = values.get(key) or getattr(base, key)
    for key in _INT_FIELDS:
        raw = values.get(key, "")
        if raw:
            try:
                changes[key] = int(raw)
            except ValueError:
                raise ValueError(f"{key} must be a whole number, got {raw!r}") from None
        else:
            changes[key] = getattr(base, key)
    knobs = dict(base.assumptions)
    for key in _KNOB_FIELDS:
        raw = values.get(key, "")
        if raw:
            try:
                knobs[key] = float(raw)
            except ValueError:
                raise ValueError(f"{key} must be a number, got {raw!r}") from None
        else:
            knobs.pop(key, None)
    changes["assumptions"] = knobs
    return base.with_changes(**changes)


def _assumption_line(a: dict[str, Any]) -> str:
    keys = ("weights_quant", "kept_unquantised", "kv_cache_dtype", "allreduce_alpha_us", "allreduce_beta_gbs",
            "mem_efficiency", "step_overhead_us", "embedding_table_read", "sparse_attention", "mtp_layers",
            "fits_in_memory", "weights_gb_per_gpu_stored")
    parts = [f"{k} {a[k]}" for k in keys if k in a]
    if "weights_from" in a:   # where the weight bytes come from: the checkpoint's headers or the config alone
        parts.append(f"weights {a['weights_from']}")
    return "assumptions  " + " · ".join(parts) + "   (w what-if)"

