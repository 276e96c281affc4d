"""A concurrency sweep: levels, warm-up, ticks, verdicts, results on disk.

Each level runs `concurrency` worker coroutines that take prompts from one
list until it is empty (what a semaphore over all prompts does, without
thousands of idle tasks). Every second a tick reports the tokens that
arrived, requests in flight, completions, failures, the client's own
event-loop lag and, when the server has Prometheus metrics, its own view.

A level is `ok` when every request succeeded, `partial` when some failed and
`failed` when none succeeded or the server died. After a failed level the
remaining levels are `skipped`, unless keep_going.
"""
from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from . import events
from .client import StreamClient, request_body
from .drive import drive
from .launched import death_details, launch_for_port, launch_summary
from .metrics import RequestRecord, distribution, percentile, summarize
from .prom import Scraper
from .results import RunStore
from .shard import ShardedLevel, plan_workers
from .workload import Tokenizer, build_workload

DEATH_ERRORS = ("connection refused", "server disconnected", "stream cut off mid-response",
                "connection reset")
MAX_DISTINCT_ERRORS = 5


@dataclass
class BenchConfig:
    url: str
    concurrency: list[int]
    model: str | None = None
    input_len: int = 1024
    output_len: int = 256
    num_prompts: int | None = None     # per level; None: max(8 * concurrency, 32)
    prompts_per_stream: int | None = None  # per level: this many times the concurrency
    api: str = "completions"
    warmup: int = 1
    keep_going: bool = False
    slo: dict = field(default_factory=dict)
    timeout_s: float | None = None
    stall_s: float = 60.0
    seed: int = 0
    profile: str = "local"
    tunnelled: bool = False
    server_launch: dict | None = None
    workers: int | None = None         # client processes per level; None: 1 unless the client lags
    server_port: int | None = None     # the server's port on its host, when the URL is a tunnel's end

    def prompts_for(self, concurrency: int) -> int:
        if self.num_prompts:
            return self.num_prompts
        if self.prompts_per_stream:
            return self.prompts_per_stream * concurrency
        return max(8 * concurrency, 32)

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class LagMonitor:
    """How late the event loop wakes a 100 ms sleeper: the client's own bottleneck gauge."""

    def __init__(self, period: float = 0.1):
        self.period = period
        self.samples: list[float] = []
        self.window_max = 0.0

    async def run(self) -> None:
        clock = time.perf_counter
        while True:
            before = clock()
            await asyncio.sleep(self.period)
            lag = max(0.0, clock() - before - self.period)
            self.samples.append(lag)
            self.window_max = max(self.window_max, lag)

    def take_window(self) -> float:
        value, self.window_max = self.window_max, 0.0
        return value


def _live_percentiles(records: list[RequestRecord]) -> dict:
    ttft = sorted(r.ttft * 1000 for r in records if r.ok and r.ttft is not None)
    tpot = sorted(t * 1000 for t in (r.tpot for r in records if r.ok) if t is not None)
    pick = lambda data, q: round(percentile(data, q), 3) if data else None  # noqa: E731
    return {"ttft_p50": pick(ttft, 50), "ttft_p99": pick(ttft, 99),
            "tpot_p50": pick(tpot, 50), "tpot_p99": pick(tpot, 99)}


def _ms_or_none(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 3)


def _server_refuses(url: str) -> bool:
    """True when nothing listens at the URL's port any more."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=2.0):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def skipped_level(concurrency: int, num_prompts: int, reason: str) -> dict:
    none_dist = distribution([])
    return {"concurrency": concurrency, "status": "skipped", "num_prompts": num_prompts,
            "completed": 0, "failed": 0, "errors": [], "skipped_because": reason,
            "duration_s": None, "input_tokens": None, "output_tokens": None,
            "request_throughput": None, "output_throughput": None, "total_token_throughput": None,
            "ttft_ms": none_dist, "tpot_ms": dict(none_dist), "itl_ms": dict(none_dist),
            "e2el_ms": dict(none_dist)}


class Sweep:
    """One run of the whole sweep; `stop()` ends it early and keeps what was measured."""

    def __init__(self, config: BenchConfig, emit: events.Emit = events.discard,
                 store: RunStore | None = None, link=None):
        self.config = config
        self.link = link  # a linkcheck.LinkCheck when the URL is an SSH tunnel's end
        self.emit = emit
        self.store = store
        self.stop_requested = asyncio.Event()
        self.started = time.time()
        self.doc: dict = {}
        self._previous_lag_p99: float | None = None

    def stop(self) -> None:
        self.stop_requested.set()

    async def run(self) -> dict:
        cfg = self.config
        async with httpx.AsyncClient(base_url=cfg.url, timeout=10.0) as control:
            model = cfg.model or await self._discover_model(control)
            tokenizer = Tokenizer(control, model)
            has_tokenizer = await tokenizer.probe()
            self.doc = {
                "run_id": self.store.run_id if self.store else None,
                "path": str(self.store.path) if self.store else None,
                "requests_path": str(self.store.requests_path) if self.store else None,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.started)),
                "url": cfg.url, "model": model, "api": cfg.api, "profile": cfg.profile,
                "tunnelled": cfg.tunnelled,
                "server_launch": cfg.server_launch or launch_summary(
                    launch_for_port(cfg.profile, cfg.server_port or urlsplit(cfg.url).port)),
                "workload": {"input_len": cfg.input_len, "output_len": cfg.output_len,
                             "ignore_eos": True, "input_len_method": None,
                             "num_prompts": cfg.num_prompts, "warmup": cfg.warmup, "seed": cfg.seed},
                "config": cfg.to_json(),
                "status": "running", "levels": [],
            }
            self.emit(events.make("run-start", run_id=self.doc["run_id"], url=cfg.url, model=model,
                                  api=cfg.api, workload=self.doc["workload"], levels=cfg.concurrency,
                                  tunnelled=cfg.tunnelled, path=self.doc["path"]))
            self._save()
            scraper = Scraper(control)
            halted: str | None = None
            for i, c in enumerate(cfg.concurrency):
                n = cfg.prompts_for(c)
                if halted or self.stop_requested.is_set():
                    level = skipped_level(c, n, halted or "stopped by the operator")
                else:
                    level = await self._level(i, c, n, model, tokenizer if has_tokenizer else None, scraper)
                    if self.link is not None:  # a lost SSH link is not a dead server (see linkcheck)
                        level = await self.link.settle(level, self.doc.get("server_launch"), lambda i=i, c=c, n=n: (
                            self._level(i, c, n, model, tokenizer if has_tokenizer else None, scraper)))
                        halted = level.get("halt") or halted
                    if level["status"] == "failed" and not cfg.keep_going:
                        halted = f"level {c} failed"
                    if level.get("stopped"):
                        halted = "stopped by the operator"
                self.doc["levels"].append(level)
                self.emit(events.make("level-end", level=i, concurrency=c, summary=level))
                self._save()
        self.doc["status"] = "ok" if all(lv["status"] == "ok" for lv in self.doc["levels"]) else "not ok"
        self.doc["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self._save()
        return self.doc

    async def _discover_model(self, control: httpx.AsyncClient) -> str | None:
        try:
            resp = await control.get("/v1/models")
            data = resp.json().get("data") or []
            return data[0].get("id") if data else None
        except (httpx.HTTPError, ValueError, AttributeError, IndexError):
            self.emit(events.make("error", level=None,
                                  message=f"cannot list models at {self.config.url}; sending no model name"))
            return None

    def _save(self) -> None:
        if self.store is not None:
            self.store.save(self.doc)

    async def _level(self, i: int, c: int, n: int, model: str | None,
                     tokenizer: Tokenizer | None, scraper: Scraper) -> dict:
        cfg = self.config
        warmup = min(cfg.warmup, n) if cfg.warmup > 0 else 0
        try:
            workload = await build_workload(tokenizer, n + warmup, cfg.input_len, seed=cfg.seed + i)
        except httpx.HTTPError as exc:
            self.emit(events.make("error", level=i, message=f"tokenizing the prompts failed: {exc}; "
                                  "using approximate prompt lengths"))
            workload = await build_workload(None, n + warmup, cfg.input_len, seed=cfg.seed + i)
        self.doc["workload"]["input_len_method"] = workload.method
        bodies = [request_body(cfg.api, model, p, cfg.output_len) for p in workload.prompts]
        workers = plan_workers(c, cfg.workers, self._previous_lag_p99)
        self.emit(events.make("level-start", level=i, concurrency=c, num_prompts=n, warmup=warmup,
                              workers=workers, time=time.strftime("%H:%M:%S")))
        async with StreamClient(cfg.url, cfg.api, timeout_s=cfg.timeout_s, stall_s=cfg.stall_s) as client:
            if warmup:
                await asyncio.gather(*(client.send(-1 - k, bodies[k]) for k in range(warmup)))
            client.live.tokens = 0
            level = await self._timed(i, c, n, client, list(enumerate(bodies[warmup:])), scraper,
                                      workload.approximate, workers)
        self._previous_lag_p99 = level["client_lag_ms"]["p99"]
        return level

    async def _timed(self, i: int, c: int, n: int, client: StreamClient, bodies: list[tuple[int, bytes]],
                     scraper: Scraper, approximate: bool, workers: int) -> dict:
        records: list[RequestRecord] = []
        failed = 0
        emit = self.emit

        def on_record(record: RequestRecord) -> None:
            nonlocal failed
            records.append(record)
            if not record.ok:
                failed += 1
            emit(events.make("request", level=i, index=record.index, ok=record.ok,
                             ttft_ms=_ms_or_none(record.ttft), tpot_ms=_ms_or_none(record.tpot),
                             e2el_ms=_ms_or_none(record.e2el), output_tokens=record.output_tokens,
                             input_tokens=record.input_tokens, error=record.error))

        cfg = self.config
        sharded = None
        if workers > 1:
            sharded = ShardedLevel(cfg.url, cfg.api, cfg.timeout_s, cfg.stall_s, bodies, c, workers, on_record)
            live, job = sharded.live, sharded.run()
        else:
            live, job = client.live, drive(client, bodies, c, on_record)
        lag = LagMonitor()
        lag_task = asyncio.create_task(lag.run())
        start = time.perf_counter()
        running = asyncio.create_task(job)
        stop_wait = asyncio.create_task(self.stop_requested.wait())
        per_second: list[int] = []
        ticker = asyncio.create_task(self._ticks(i, c, live, records, lambda: failed, lag, scraper, start,
                                                 per_second))
        stopped = False
        try:
            await asyncio.wait({running, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
            if not running.done():
                stopped = True
                running.cancel()
            await asyncio.gather(running, return_exceptions=True)
        finally:
            duration = time.perf_counter() - (sharded.start if sharded and sharded.start else start)
            for task in (ticker, lag_task, stop_wait):
                task.cancel()
            await asyncio.gather(ticker, lag_task, stop_wait, return_exceptions=True)
        if running.done() and not running.cancelled() and running.exception() is not None:
            raise running.exception()
        level = self._verdict(c, n, records, duration, approximate, lag, scraper, stopped)
        level["workers"] = workers
        level["ticks"] = per_second  # output tokens in each second: the chart of a saved run
        if sharded is not None:
            level["client_lag_ms"]["workers"] = sharded.worker_lag_ms
            worst = [w["p99"] for w in sharded.worker_lag_ms if w.get("p99") is not None]
            if worst:
                level["client_lag_ms"]["p99"] = max([level["client_lag_ms"]["p99"] or 0.0, *worst])
        if self.store is not None:
            self.store.append_requests(i, c, records, start)
        return level

    async def _ticks(self, i, c, live, records, failed, lag, scraper, start, per_second) -> None:
        last_tokens = 0
        second = 0
        scrape = asyncio.create_task(scraper.scrape())  # ready for the first tick
        try:
            while True:
                second += 1
                await asyncio.sleep(max(0.0, start + second - time.perf_counter()))
                if scrape.done():
                    scrape = asyncio.create_task(scraper.scrape())
                tokens = live.tokens
                per_second.append(tokens - last_tokens)
                self.emit(events.make(
                    "tick", level=i, concurrency=c, second=second, output_tokens=per_second[-1],
                    in_flight=live.in_flight, completed=len(records) - failed(), failed=failed(),
                    lag_ms=round(lag.take_window() * 1000, 3), live=_live_percentiles(records),
                    server=scraper.latest))
                last_tokens = tokens
        finally:
            scrape.cancel()

    def _verdict(self, c, n, records, duration, approximate, lag, scraper, stopped) -> dict:
        ok = [r for r in records if r.ok]
        bad = [r for r in records if not r.ok]
        counts: dict[str, int] = {}
        for r in bad:
            counts[r.error or "unknown"] = counts.get(r.error or "unknown", 0) + 1
        level = {"concurrency": c, "status": "ok", "num_prompts": n, "completed": len(ok),
                 "failed": len(bad), "errors": list(counts)[:MAX_DISTINCT_ERRORS], "error_counts": counts}
        level.update(summarize(records, duration if records else None, self.config.slo))
        if stopped:
            level["stopped"] = True
            not_sent = n - len(records)
            if not_sent:
                level["not_sent"] = not_sent
        level["input_len_approximate"] = approximate
        level["short_outputs"] = sum(1 for r in ok if (r.output_tokens or 0) < self.config.output_len)
        level["client_lag_ms"] = {"p99": round(percentile(sorted(lag.samples), 99) * 1000, 3)
                                  if lag.samples else None,
                                  "max": round(max(lag.samples) * 1000, 3) if lag.samples else None}
        level["server"] = scraper.latest
        server_tpot = [r.server_tpot_ms for r in ok if r.server_tpot_ms is not None]
        level["server_tpot_ms_mean"] = sum(server_tpot) / len(server_tpot) if server_tpot else None
        level["server_died"] = self._death(bad)
        if level["server_died"] or not ok:
            level["status"] = "failed"
        elif bad or stopped:
            level["status"] = "partial"
        return level

    def _death(self, bad: list[RequestRecord]) -> dict | None:
        """When the failures look like a dead server and it refuses connections now, say so."""
        if not any(r.error in DEATH_ERRORS for r in bad):
            return None
        if not _server_refuses(self.config.url):
            return None
        times = [r.failed_at for r in bad if r.error in DEATH_ERRORS and r.failed_at]
        first = min(times) if times else time.time()
        since = time.strftime("%H:%M:%S", time.localtime(first))
        launch = (self.doc.get("server_launch") or {}).get("launch")
        details = death_details(self.config.profile, launch, self.started)
        death = {"since": since, "message": f"connection refused from {since}", **details}
        if details["pid"] is not None:
            death["message"] += f"; server pid {details['pid']} exited"
            if details["exit_status"] is not None:
                death["message"] += f" ({details['exit_status']})"
        if details["crash_record"]:
            death["message"] += f"; crash record {details['crash_record']}"
        return death


def exit_code(doc: dict) -> int:
    """0 when every level was ok, 3 otherwise."""
    levels = doc.get("levels") or []
    return 0 if levels and all(lv.get("status") == "ok" for lv in levels) else 3
