"""What a sweep looks like so far, rebuilt from its JSON-lines events.

The Bench tab feeds every event it reads from the load generator into a
`SweepView` and draws from it; tests feed it a recorded stream. A saved run
becomes the same view with `view_from_run`, which is how an earlier run is
overlaid on the live one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

FINAL = ("ok", "partial", "failed", "skipped", "interrupted")


@dataclass
class LevelView:
    concurrency: int | None
    num_prompts: int | None = None
    label: str | None = None                     # "c=64", "4/s ≤64": what the chart and table call it
    status: str = "pending"          # pending, running, then one of FINAL
    completed: int = 0
    failed: int = 0
    in_flight: int = 0
    workers: int = 1
    live: dict = field(default_factory=dict)     # ttft/tpot p50/p99 while running
    summary: dict | None = None                  # the level's --json entry once it ended

    @property
    def done(self) -> int:
        return self.completed + self.failed

    @property
    def progress(self) -> float | None:
        if not self.num_prompts:
            return None
        if self.status in ("ok", "partial", "failed", "interrupted"):
            return 1.0 if not (self.summary or {}).get("not_sent") else self.done / self.num_prompts
        return min(1.0, self.done / self.num_prompts)

    def stat(self, metric: str, which: str) -> float | None:
        """A percentile in ms: the final one when the level ended, else the live one."""
        if self.summary is not None:
            value = (self.summary.get(f"{metric}_ms") or {}).get("median" if which == "p50" else which)
            return value
        return self.live.get(f"{metric}_{which}")

    @property
    def output_throughput(self) -> float | None:
        return self.summary.get("output_throughput") if self.summary else None

    @property
    def explanation(self) -> str | None:
        """Why a level is not ok, in one line: the first of its notes (console.bench.outcome)."""
        from .outcome import level_notes

        notes = level_notes(self.summary)
        return notes[0] if notes else None


@dataclass
class SweepView:
    run_id: str | None = None
    url: str | None = None
    model: str | None = None
    workload: dict = field(default_factory=dict)
    tunnelled: bool = False
    path: str | None = None
    levels: list[LevelView] = field(default_factory=list)
    series: list[float] = field(default_factory=list)            # output tok/s, one point a second
    boundaries: list[tuple[int, int]] = field(default_factory=list)  # (series index, concurrency)
    lag_ms: float | None = None
    lag_max_ms: float | None = None
    server: dict | None = None
    errors: list[str] = field(default_factory=list)
    running: bool = False
    exit_code: int | None = None

    def apply(self, event: dict) -> None:
        kind = event.get("event")
        handler = getattr(self, "_on_" + str(kind).replace("-", "_"), None)
        if handler is not None:
            handler(event)

    def _level(self, event: dict) -> LevelView | None:
        i = event.get("level")
        return self.levels[i] if isinstance(i, int) and 0 <= i < len(self.levels) else None

    def _on_run_start(self, e: dict) -> None:
        self.run_id, self.url, self.model = e.get("run_id"), e.get("url"), e.get("model")
        self.workload = e.get("workload") or {}
        self.tunnelled = bool(e.get("tunnelled"))
        self.path = e.get("path")
        labels = e.get("level_labels") or []
        self.levels = [LevelView(concurrency=c, label=labels[k] if k < len(labels) else None)
                       for k, c in enumerate(e.get("levels") or [])]
        self.running = True

    def _on_level_start(self, e: dict) -> None:
        level = self._level(e)
        if level is None:
            return
        level.status = "running"
        level.num_prompts = e.get("num_prompts")
        level.workers = e.get("workers") or 1
        self.boundaries.append((len(self.series), level.label or level.concurrency))

    def _on_tick(self, e: dict) -> None:
        tokens = float(e.get("output_tokens") or 0)
        if e.get("final"):
            # the part-second after the last whole one: as a rate, when long enough to mean one
            span = e.get("span_s") or 0
            if isinstance(span, (int, float)) and span >= 0.2:
                self.series.append(tokens / span)
        else:
            self.series.append(tokens)
        level = self._level(e)
        if level is not None:
            level.in_flight = e.get("in_flight") or 0
            level.live = e.get("live") or {}
        lag = e.get("lag_ms")
        if isinstance(lag, (int, float)):
            self.lag_ms = lag
            self.lag_max_ms = max(self.lag_max_ms or 0.0, lag)
        self.server = e.get("server")

    def _on_request(self, e: dict) -> None:
        level = self._level(e)
        if level is not None:
            if e.get("ok"):
                level.completed += 1
            else:
                level.failed += 1

    def _on_level_end(self, e: dict) -> None:
        level = self._level(e)
        summary = e.get("summary") or {}
        if level is None:
            return
        level.summary = summary
        level.status = summary.get("status", "failed")
        level.completed = summary.get("completed", level.completed)
        level.failed = summary.get("failed", level.failed)
        level.num_prompts = summary.get("num_prompts", level.num_prompts)
        level.in_flight = 0

    def _on_error(self, e: dict) -> None:
        self.errors.append(str(e.get("message")))

    def _on_run_end(self, e: dict) -> None:
        # a finished sweep reads the same client lag live and when shown again from disk
        lags = [(lv.summary or {}).get("client_lag_ms", {}).get("p99") for lv in self.levels]
        lags = [v for v in lags if isinstance(v, (int, float))]
        if lags:
            self.lag_max_ms = max(lags)
        self.running = False
        self.exit_code = e.get("exit_code")
        self.path = e.get("path") or self.path

    # -- what the tab title and status line say
    @property
    def finished_levels(self) -> int:
        """Levels that have ended, however (FINAL): the count the tab title and the stop question give."""
        return sum(1 for lv in self.levels if lv.status in FINAL)

    def summary_text(self) -> str:
        if not self.levels:
            return ""
        finished = self.finished_levels
        total = len(self.levels)
        if self.running:
            return f"■ {finished}/{total}"
        if any(lv.status == "failed" for lv in self.levels):
            return f"✖ {sum(1 for lv in self.levels if lv.status == 'ok')}/{total}"
        if all(lv.status == "ok" for lv in self.levels):
            return f"✔ {total}/{total}"
        return f"◐ {finished}/{total}"

    @property
    def peak_tps(self) -> float | None:
        return max(self.series) if self.series else None


def view_from_run(doc: dict) -> SweepView:
    """A saved run as a finished view (its chart from each level's per-second ticks)."""
    view = SweepView(run_id=doc.get("run_id"), url=doc.get("url"), model=doc.get("model"),
                     workload=doc.get("workload") or {}, tunnelled=bool(doc.get("tunnelled")),
                     path=doc.get("path"), exit_code=None)
    lags = [(lv.get("client_lag_ms") or {}).get("p99") for lv in doc.get("levels") or []]
    lags = [v for v in lags if isinstance(v, (int, float))]
    view.lag_max_ms = max(lags) if lags else None
    for summary in doc.get("levels") or []:
        level = LevelView(concurrency=summary.get("concurrency"), label=summary.get("label"),
                          num_prompts=summary.get("num_prompts"),
                          status=summary.get("status", "failed"), completed=summary.get("completed") or 0,
                          failed=summary.get("failed") or 0, workers=summary.get("workers") or 1,
                          summary=summary)
        view.levels.append(level)
        ticks = summary.get("ticks") or []
        if summary.get("status") != "skipped":
            view.boundaries.append((len(view.series), level.label or level.concurrency))
        view.series.extend(float(t) for t in ticks)
    return view
