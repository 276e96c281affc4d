"""A concurrency sweep: levels, warm-up, ticks, verdicts, results on disk.

Each level runs `concurrency` worker coroutines that take prompts from one
list until it is empty (what a semaphore over all prompts does, without
thousands of idle tasks). Every second a tick reports the tokens that
arrived, requests in flight, completions, failures, the client's own
event-loop lag and, when the server has Prometheus metrics, its own view.

A level is either closed loop (a concurrency) or open loop (a request rate,
optionally capped by a concurrency); see drive.py.

Before level 1 the server must answer `/v1/models` and list the model, or
the run does not start (`NotStarted`). Every step has a deadline and gives
way at once to `stop()`: nothing waits on a server for ever.

A level is `ok` when every request succeeded, `partial` when some failed and
`failed` when none succeeded, the server died or hung. A server the
operator stopped from gpudeck during the level is said so, not "died".
After a failed level the remaining levels are `skipped`, unless keep_going.
"""
from __future__ import annotations

import asyncio
import socket
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import httpx

from ..fmt import clock, iso
from . import events
from .client import HUNG, StreamClient, default_timeout, request_body
from .loop import clock_info
from .drive import arrivals, drive
from .launched import death_details, launch_for_port, launch_summary, operator_stop
from .metrics import RequestRecord, distribution, percentile, summarize
from .prom import Scraper
from . import inferences, recording
from console.store import launches
from console.store.timeline import TimelineWriter, timeline_path
from .gpu_watch import GpuWatch
from .results import RunStore
from .shard import ShardedLevel, plan_workers
from .dataset import Dataset, open_dataset
from .workload import Tokenizer, build_workload, dataset_workload

DEATH_ERRORS = ("connection refused", "server disconnected", "stream cut off mid-response",
                "connection reset")
MAX_DISTINCT_ERRORS = 5
MODELS_DEADLINE_S = 15.0       # /v1/models before level 1
PROBE_DEADLINE_S = 20.0        # /tokenize and /detokenize probe
CHECK_DEADLINE_S = 5.0         # the one check of a server that hung
SCRAPE_DEADLINE_S = 10.0       # the server's /metrics at the end of a level
SCRAPE_START_S = 2.0            # ... and before its first request (a slow answer delays the level no more)


class NotStarted(Exception):
    """The server is not ready for a sweep (no answer, or the model not listed): nothing was sent."""


class _Stopped(Exception):
    """stop() was called while a preliminary step was waiting."""


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
    server_url: str | None = None      # the server's own URL, when `url` is a tunnel's local end
    request_rates: list[float] | None = None   # open loop: one level per rate (req/s; inf: all at once)
    burstiness: float = 1.0            # gamma shape of the gaps; 1 is Poisson
    ramp_up: tuple | None = None       # (strategy, start_rps): the rate ramps to the level's over the level
    max_concurrency: int | None = None  # open loop: cap on requests in flight
    shared_prefix_len: int = 0
    range_ratio: float = 0.0
    dataset: str | None = None         # path of a JSONL or ShareGPT file
    dataset_format: str = "random"     # random, jsonl, sharegpt
    fixed_output_len: bool = False     # dataset: use output_len for every request
    dataset_checked: Dataset | None = None   # the setup's check of the file: the sweep does not read it whole again
    temperature: float | None = None
    top_p: float | None = None
    extra_body: dict | None = None
    headers: dict | None = None        # sent, never saved (names only)
    api_key_env: str | None = None     # the variable the API key came from (the key is never saved)
    percentiles: list[float] | None = None
    gpu_sample: bool = True            # sample the server's GPUs through the sweep (energy, the timeline's gpu series)
    gpu_idle_mib: float = 1024.0       # a GPU above this much memory in use is one the server holds

    def prompts_for(self, concurrency: int) -> int:
        if self.num_prompts:
            return self.num_prompts
        if self.prompts_per_stream:
            return self.prompts_per_stream * concurrency
        return max(8 * concurrency, 32)

    def level_size(self, c: int | None, rate: float | None) -> int:
        """Requests in a level: as configured; for a rate without a count, 8 s of it (at least 32)."""
        if rate is None or self.num_prompts or self.prompts_per_stream:
            return self.prompts_for(c or 1)
        return max(32, int(min(rate, 1000) * 8))

    def to_json(self) -> dict:
        """The configuration as saved: header values (they may be secrets) are left out."""
        doc = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "dataset_checked"}
        doc["headers"] = sorted(self.headers or {})
        if self.server_url:  # the tunnel's local port is throwaway: the run names the server
            doc["url"] = self.server_url
            doc.pop("server_url")
        return doc

    @property
    def open_loop(self) -> bool:
        return bool(self.request_rates)

    def level_specs(self) -> list[tuple[int | None, float | None]]:
        """(concurrency, rate) per level: rates with the cap, or concurrencies."""
        if self.request_rates:
            return [(self.max_concurrency, r) for r in self.request_rates]
        return [(c, None) for c in self.concurrency]

    def request_timeout(self) -> float:
        return self.timeout_s or default_timeout(self.output_len)

    def request_options(self) -> dict:
        return {"temperature": self.temperature, "top_p": self.top_p, "extra_body": self.extra_body}


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


def level_label(concurrency: int | None, rate: float | None) -> str:
    """`c=64`, `4/s`, `4/s ≤64`: how a level is named in tables and charts."""
    if rate is None:
        return f"c={concurrency}"
    text = "inf/s" if rate == float("inf") else f"{rate:g}/s"
    return text + (f" ≤{concurrency}" if concurrency else "")


async def _check_server(url: str, headers: dict | None) -> str:
    """One look at a server that stopped answering: refused, silent, or answering."""
    if await asyncio.to_thread(_server_refuses, url):
        return "refuses connections"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=CHECK_DEADLINE_S, headers=headers) as c:
            resp = await asyncio.wait_for(c.get("/v1/models"), CHECK_DEADLINE_S)
        return f"/v1/models answers HTTP {resp.status_code}"
    except (asyncio.TimeoutError, httpx.TimeoutException):
        return f"/v1/models gave no answer within {CHECK_DEADLINE_S:g} s"
    except httpx.HTTPError as exc:
        return f"/v1/models failed: {type(exc).__name__}"


def skipped_level(concurrency: int | None, num_prompts: int, reason: str, rate: float | None = None) -> dict:
    none_dist = distribution([])
    if rate is not None:
        concurrency, cap = None, concurrency
    return {"concurrency": concurrency,
            **({"request_rate": rate, "max_concurrency": cap} if rate is not None else {}),
            "status": "skipped", "num_prompts": num_prompts,
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
        # the run's timeline, on the sweep's monotonic clock; saved beside the run when there is a store
        self.timeline = TimelineWriter(timeline_path(store.path) if store is not None else None)
        self.gpu: GpuWatch | None = None   # the sweep's one GPU sampler, set by its caller (console.bench.gpu_watch)
        self.doc: dict = {}
        self._previous_lag_p99: float | None = None
        self._dataset = None
        self._refused = False

    def stop(self) -> None:
        self.stop_requested.set()

    async def _or_stop(self, coro, deadline: float | None):
        """Await `coro` unless stop() comes first (_Stopped) or the deadline passes (TimeoutError)."""
        task = asyncio.ensure_future(coro)
        stopper = asyncio.ensure_future(self.stop_requested.wait())
        try:
            done, _ = await asyncio.wait({task, stopper}, timeout=deadline, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
        if task in done:
            return task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if self.stop_requested.is_set():
            raise _Stopped()
        raise asyncio.TimeoutError()

    async def run(self) -> dict:
        if self.gpu is not None:
            self.gpu.start()
        try:
            return await self._run()
        finally:
            if self.gpu is not None:
                await self.gpu.close()

    async def _run(self) -> dict:
        cfg = self.config
        if cfg.dataset:
            try:
                self._dataset = cfg.dataset_checked if cfg.dataset_checked is not None else \
                    open_dataset(cfg.dataset, cfg.dataset_format)
            except ValueError as exc:
                raise NotStarted(str(exc)) from None
        async with httpx.AsyncClient(base_url=cfg.url, timeout=10.0, headers=cfg.headers) as control:
            try:
                model = await self._or_stop(self._check_models(control), MODELS_DEADLINE_S)
            except asyncio.TimeoutError:
                raise NotStarted(f"{self._shown_url}/v1/models gave no answer within "
                                 f"{MODELS_DEADLINE_S:g} s") from None
            except _Stopped:
                raise NotStarted("stopped by the operator before level 1") from None
            tokenizer = Tokenizer(control, model)
            try:
                has_tokenizer = await self._or_stop(tokenizer.probe(), PROBE_DEADLINE_S)
            except (asyncio.TimeoutError, _Stopped):
                has_tokenizer = False
                tokenizer.dialect = None
            specs = cfg.level_specs()
            self.doc = {
                "run_id": self.store.run_id if self.store else None,
                "path": str(self.store.path) if self.store else None,
                "requests_path": str(self.store.requests_path) if self.store else None,
                "started": iso(self.started),
                "url": self._shown_url, "model": model, "api": cfg.api, "profile": cfg.profile,
                "tunnelled": cfg.tunnelled,
                "server_launch": cfg.server_launch or launch_summary(
                    launch_for_port(cfg.profile, cfg.server_port or urlsplit(cfg.url).port)),
                "workload": {"input_len": cfg.input_len, "output_len": cfg.output_len,
                             "ignore_eos": True, "input_len_method": None,
                             "num_prompts": cfg.num_prompts, "warmup": cfg.warmup, "seed": cfg.seed,
                             "dataset": cfg.dataset_format, "dataset_path": cfg.dataset,
                             "shared_prefix_len": cfg.shared_prefix_len, "range_ratio": cfg.range_ratio,
                             "request_rates": cfg.request_rates, "burstiness": cfg.burstiness,
                             "ramp_up": list(cfg.ramp_up) if cfg.ramp_up else None,
                             "max_concurrency": cfg.max_concurrency},
                "config": cfg.to_json(),
                "status": "running", "levels": [],
                "client_clock": clock_info(),   # how finely chunks were stamped (ITL is no finer)
            }
            self.emit(events.make("run-start", run_id=self.doc["run_id"], url=self._shown_url, model=model,
                                  api=cfg.api, workload=self.doc["workload"],
                                  levels=[c if r is None else None for c, r in specs],
                                  level_labels=[level_label(c, r) for c, r in specs],
                                  tunnelled=cfg.tunnelled, path=self.doc["path"]))
            self._save()
            scraper = Scraper(control, on_sample=lambda view, sample, sent: recording.server(
                self.timeline, view, sample, sent))
            halted: str | None = None
            numbered = 0
            self._prompts_in_run = sum(self._level_size(c, r) + cfg.warmup for c, r in specs)
            if self.link is not None:   # room for each level to be rerun once after a lost link
                self._prompts_in_run *= 2
            for i, (c, rate) in enumerate(specs):
                n = self._level_size(c, rate)
                if halted or self.stop_requested.is_set():
                    level = skipped_level(c, n, halted or "stopped by the operator", rate)
                else:
                    tok = tokenizer if has_tokenizer else None
                    level = await self._level(i, c, rate, n, model, tok, scraper, numbered)
                    numbered += n + cfg.warmup
                    if self.link is not None:  # a lost SSH link is not a dead server (see linkcheck)
                        rerun_from = numbered   # a rerun sends fresh prompts: none repeats in the run
                        level = await self.link.settle(level, self.doc.get("server_launch"), lambda i=i, c=c, rate=rate, n=n, tok=tok, start=rerun_from: (
                            self._level(i, c, rate, n, model, tok, scraper, start)))
                        if level.get("interrupted_attempt"):
                            numbered += n + cfg.warmup
                        halted = level.get("halt") or halted
                    if level.get("stopped"):
                        halted = "stopped by the operator"
                    elif level.get("server_stopped"):
                        halted = "server stopped by operator"
                    elif level.get("server_stopping"):
                        halted = "server stopping"
                    elif level["status"] == "failed" and not cfg.keep_going:
                        halted = f"level {level_label(c, rate)} failed" if rate is not None \
                            else f"level {c} failed"
                level["label"] = level_label(c, rate)
                self._end_level(i, level)
                self.doc["levels"].append(level)
                self.emit(events.make("level-end", level=i, concurrency=level.get("concurrency"), summary=level))
                self._save()
        self.doc["status"] = "ok" if all(lv["status"] == "ok" for lv in self.doc["levels"]) else "not ok"
        self.doc["finished"] = iso()
        self._save()
        return self.doc

    def _level_size(self, c: int | None, rate: float | None) -> int:
        return self.config.level_size(c, rate)

    @property
    def _shown_url(self) -> str:
        """The server's own URL: a tunnel's throwaway local port is never what a run records."""
        return self.config.server_url or self.config.url

    async def _check_models(self, control: httpx.AsyncClient) -> str:
        """The model to send: it must be listed by /v1/models, or the run does not start."""
        where = f"{self._shown_url}/v1/models"
        try:
            resp = await control.get("/v1/models")
        except httpx.ConnectError:
            raise NotStarted(f"{where}: connection refused (is the server up?)") from None
        except httpx.HTTPError as exc:
            raise NotStarted(f"{where}: {type(exc).__name__} {exc}".strip()) from None
        if resp.status_code != 200:
            raise NotStarted(f"{where} answered HTTP {resp.status_code}")
        try:
            data = resp.json().get("data") or []
            ids = [m.get("id") for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
        except (ValueError, AttributeError):
            raise NotStarted(f"{where} did not answer with a model list") from None
        if not ids:
            raise NotStarted(f"{where} lists no model (still loading?)")
        wanted = self.config.model
        if wanted and wanted not in ids:
            shown = ", ".join(ids[:5]) + (" …" if len(ids) > 5 else "")
            raise NotStarted(f"model {wanted!r} is not served at {self._shown_url} (it lists {shown})")
        return wanted or ids[0]

    def _save(self) -> None:
        if self.store is not None:
            self.store.save(self.doc)
            self.timeline.save(self.store._text)

    def _end_level(self, i: int, level: dict) -> None:
        """The level's end on the timeline: its marks (death, hang, the crash's decisive line) and the
        inferences its data supports, which the level carries as one-line notes."""
        tl = self.timeline
        tl.mark(tl.now(), "level-end", f"level {level.get('label')} {level.get('status')}", i)
        for key in ("server_died", "server_hung", "server_stopping", "server_stopped"):
            if isinstance(level.get(key), dict):
                tl.mark(tl.now(), key.replace("_", " "), str(level[key].get("message") or key), i)
        if isinstance(level.get("server_died"), dict) or isinstance(level.get("server_hung"), dict):
            launch = (self.doc.get("server_launch") or {}).get("launch")
            if not inferences.mark_crash(tl, self.config.profile, launch, i) and not self.config.tunnelled:
                record = launches.get(self.config.profile, launch) if launch else None
                inferences.mark_log_verdict(tl, record.log if record else None, i)
        if self.gpu is not None and level.get("status") != "skipped":
            level["energy"] = self.gpu.level_energy(level.get("duration_s"), level.get("output_tokens"))
        itl = next((lv["itl_ms"]["p99"] for lv in [level, *reversed(self.doc["levels"])]
                    if isinstance(lv.get("itl_ms"), dict) and lv["itl_ms"].get("p99") is not None), None)
        notes = inferences.for_level(tl, i, level, (self.doc.get("server_launch") or {}).get("flags"), itl)
        if notes:
            level["notes"] = notes
            tl.notes[str(i)] = notes

    async def _workload(self, i: int, n: int, tokenizer: Tokenizer | None, numbered: int, total: int):
        cfg = self.config
        if self._dataset is not None:
            return await dataset_workload(self._dataset, tokenizer, n, cfg.output_len, seed=cfg.seed + i,
                                          fixed_output=cfg.fixed_output_len)
        return await build_workload(tokenizer, n, cfg.input_len, seed=cfg.seed + i,
                                    shared_prefix_len=cfg.shared_prefix_len, range_ratio=cfg.range_ratio,
                                    output_len=cfg.output_len, first_number=numbered, total=total,
                                    run_seed=cfg.seed)

    async def _level(self, i: int, c: int | None, rate: float | None, n: int, model: str | None,
                     tokenizer: Tokenizer | None, scraper: Scraper, numbered: int) -> dict:
        cfg = self.config
        warmup = min(cfg.warmup, n) if cfg.warmup > 0 else 0
        total = self._prompts_in_run
        # tokenizing costs a few round trips per prompt: allow for that, but not for ever
        deadline = 60.0 + 0.2 * (n + warmup)
        try:
            workload = await self._or_stop(self._workload(i, n + warmup, tokenizer, numbered, total), deadline)
        except _Stopped:
            return self._stopped_before(c, rate, n)
        except (httpx.HTTPError, asyncio.TimeoutError) as exc:
            why = "took too long" if isinstance(exc, asyncio.TimeoutError) else f"failed: {exc}"
            self.emit(events.make("error", level=i, message=f"tokenizing the prompts {why}; "
                                  "using approximate prompt lengths"))
            workload = await self._workload(i, n + warmup, None, numbered, total)
        self.doc["workload"]["input_len_method"] = workload.method
        outs = workload.output_lens or [cfg.output_len] * len(workload.prompts)
        options = cfg.request_options()
        bodies = [request_body(cfg.api, model, p, o, options) for p, o in zip(workload.prompts, outs)]
        workers = 1 if rate is not None else plan_workers(c, cfg.workers, self._previous_lag_p99)
        self.timeline.mark(self.timeline.now(), "level-start", f"level {level_label(c, rate)} starts", i)
        self.emit(events.make("level-start", level=i, concurrency=c if rate is None else None,
                              max_concurrency=c if rate is not None else None, num_prompts=n, warmup=warmup,
                              workers=workers, time=clock(time.time()), request_rate=rate,
                              label=level_label(c, rate)))
        async with StreamClient(cfg.url, cfg.api, timeout_s=cfg.request_timeout(), stall_s=cfg.stall_s,
                                headers=cfg.headers) as client:
            if warmup:
                try:
                    await self._or_stop(asyncio.gather(*(client.send(-1 - k, bodies[k]) for k in range(warmup))),
                                        cfg.request_timeout() + 5)
                except _Stopped:
                    return self._stopped_before(c, rate, n)
                except asyncio.TimeoutError:
                    self.emit(events.make("error", level=i, message="the warm-up request did not finish in time"))
            client.live.tokens = 0
            client.live.peak_in_flight = 0
            level = await self._timed(i, c, rate, n, client, list(enumerate(bodies[warmup:])), scraper,
                                      workload.approximate, workers, sum(outs[warmup:]))
        self._previous_lag_p99 = level["client_lag_ms"]["p99"]
        return level

    def _stopped_before(self, c: int | None, rate: float | None, n: int) -> dict:
        level = skipped_level(c, n, "stopped by the operator", rate)
        level.update({"status": "partial", "stopped": True, "not_sent": n})
        return level

    async def _timed(self, i: int, c: int | None, rate: float | None, n: int, client: StreamClient,
                     bodies: list[tuple[int, bytes]], scraper: Scraper, approximate: bool, workers: int,
                     wanted_tokens: int) -> dict:
        records: list[RequestRecord] = []
        failed = 0
        emit = self.emit

        def on_record(record: RequestRecord) -> None:
            nonlocal failed
            records.append(record)
            if not record.ok:
                failed += 1
            recording.request(self.timeline, i, record)
            emit(events.make("request", level=i, index=record.index, ok=record.ok,
                             ttft_ms=_ms_or_none(record.ttft), tpot_ms=_ms_or_none(record.tpot),
                             e2el_ms=_ms_or_none(record.e2el), output_tokens=record.output_tokens,
                             input_tokens=record.input_tokens, error=record.error,
                             queue_ms=_ms_or_none(record.queue_s)))

        cfg = self.config
        sharded = None
        if workers > 1:
            sharded = ShardedLevel(cfg.url, cfg.api, cfg.request_timeout(), cfg.stall_s, bodies, c, workers,
                                   on_record, headers=cfg.headers)
            live, job = sharded.live, sharded.run()
        elif rate is not None:
            schedule = arrivals(len(bodies), rate, cfg.burstiness, seed=cfg.seed + i,
                                ramp=(cfg.ramp_up[0], cfg.ramp_up[1], rate) if cfg.ramp_up else None)
            live, job = client.live, drive(client, bodies, c or 0, on_record, schedule=schedule)
        else:
            live, job = client.live, drive(client, bodies, c, on_record)
        try:  # the server's counters before the level's first request: its average starts here
            await self._or_stop(scraper.begin_level(timeout=SCRAPE_START_S), SCRAPE_START_S + 1)
        except (_Stopped, asyncio.TimeoutError):
            pass
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
        # one last tick for the part-second since the last one: every level has at least one
        server = await self._final_tick(i, c, live, records, failed, lag, scraper, start, per_second, duration)
        if running.done() and not running.cancelled() and running.exception() is not None:
            raise running.exception()
        self._refused = await self._refuses_soon(records) if not stopped else False
        level = self._verdict(c, n, records, duration, approximate, lag, server, stopped,
                              start if sharded is None else (sharded.start or start), wanted_tokens)
        if rate is not None:
            # not a closed-loop concurrency: reports and the roofline, which read `concurrency`, skip it
            level["concurrency"] = None
            level["max_concurrency"] = c
            level["request_rate"] = rate
            level["burstiness"] = cfg.burstiness
        level["max_concurrent_requests"] = live.peak_in_flight if sharded is None else None
        if not stopped and not level.get("server_died") and not level.get("server_stopped"):
            await self._going_away(level, records)
        hung = client.hung or next((r.error for r in records if r.error == HUNG), None)
        if hung and not stopped and not level.get("server_stopping"):
            await self._hung(level, client.hung or f"{HUNG}: every stream went silent for {cfg.stall_s:g} s",
                             client.hung_at)
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

    async def _hung(self, level: dict, why: str, hung_at: float | None) -> None:
        """Every stream went silent: check the server once and say what was found."""
        since = clock(hung_at or time.time())
        stop_time = self._operator_stop()
        level["status"] = "failed"
        if stop_time:
            level["server_stopped"] = {"at": stop_time,
                                       "message": f"server stopped by operator at {stop_time}"}
            return
        try:
            check = await self._or_stop(_check_server(self.config.url, self.config.headers), CHECK_DEADLINE_S + 3)
        except (_Stopped, asyncio.TimeoutError):
            check = "not checked"
        if check == "refuses connections" and not self.config.tunnelled:  # a tunnel refusing is a lost link
            # streams still open but silent, and no new connection taken: the server has closed its
            # listener and waits for these connections to end. It is shutting down (vLLM after a
            # SIGTERM keeps the HTTP server up until the clients leave), not hung.
            level["server_stopping"] = {
                "since": since, "check": check,
                "message": f"server stopping: it refuses new connections, and the streams it holds open "
                           f"have been silent since {since}"}
            return
        message = f"{why} (last byte {since}); server check: {check}"
        if check == "refuses connections":
            # it went silent, then away: what gpudeck knows of its end, as for a death
            message = self._with_end(message)
        level["server_hung"] = {"since": since, "check": check, "message": message}

    def _with_end(self, message: str) -> str:
        """`message` plus what gpudeck knows of the server's end: its pid's exit, its crash record."""
        launch = (self.doc.get("server_launch") or {}).get("launch")
        details = death_details(self.config.profile, launch, self.started)
        if details["pid"] is not None:
            message += f"; server pid {details['pid']} exited"
        if details["crash_record"]:
            message += f"; crash record {details['crash_record']}"
        return message

    async def _going_away(self, level: dict, records: list[RequestRecord]) -> None:
        """Every failure of the level is the server's own error, and then its port refuses
        connections: the server is shutting down under the streams (vLLM after a SIGTERM,
        or after its engine died, ends each open stream with an error and exits)."""
        bad = [r for r in records if not r.ok]
        if self.config.tunnelled or not ended_in_order(bad):
            return  # through a tunnel a refusal is the link's (see linkcheck)
        for _ in range(40):  # 10 s: a loaded host may take a while to close its listener
            if await asyncio.to_thread(_server_refuses, self.config.url):
                break
            if self.stop_requested.is_set():
                return
            await asyncio.sleep(0.25)
        else:
            return
        times = [r.failed_at for r in bad if r.failed_at]
        since = clock(min(times) if times else time.time())
        message = (f"server stopping: the streams it held ended with its error ({bad[0].error}) "
                   f"at {since}, and it now refuses connections")
        message = self._with_end(message)
        level["server_stopping"] = {"since": since, "check": "refuses connections", "message": message}

    async def _refuses_soon(self, records: list[RequestRecord]) -> bool:
        """After failures that look like a death: does the port refuse connections (within 3 s)?

        A crashing server resets its connections a moment before its listening
        socket goes away; one look right away could miss the death.
        """
        if not any(r.error in DEATH_ERRORS for r in records):
            return False
        for _ in range(12):
            if await asyncio.to_thread(_server_refuses, self.config.url):
                return True
            if self.stop_requested.is_set():
                return False
            await asyncio.sleep(0.25)
        return False

    def _operator_stop(self) -> str | None:
        launch = (self.doc.get("server_launch") or {}).get("launch")
        return operator_stop(self.config.profile, launch)

    async def _final_tick(self, i, c, live, records, failed, lag, scraper, start, per_second,
                          duration: float) -> dict | None:
        """The tick for the part-second since the last one, after one scrape of the server's end of
        the level (bounded, given way to a stop); returns the level's server view (prom.level_view)."""
        elapsed = time.perf_counter() - start
        span = elapsed - len(per_second)
        tokens = live.tokens - sum(per_second)
        answering = any(r.ok for r in records)
        scrape = scraper.available is not False and answering and not self.stop_requested.is_set()
        server = None
        # a level shorter than a scrape waits longer for its first one; others keep their ticks' pace
        deadline = SCRAPE_DEADLINE_S if scraper.latest is None else SCRAPE_START_S
        try:
            server = await self._or_stop(scraper.end_level(duration, timeout=deadline, scrape=scrape), deadline + 1)
        except (_Stopped, asyncio.TimeoutError):
            pass
        if span <= 0:
            return server
        recording.tick(self.timeline, i, tokens, span, live.in_flight)
        self.emit(events.make(
            "tick", level=i, concurrency=c, second=round(elapsed, 3), output_tokens=tokens, final=True,
            span_s=round(span, 3), in_flight=live.in_flight, completed=len(records) - failed, failed=failed,
            lag_ms=round(lag.take_window() * 1000, 3), live=_live_percentiles(records), server=scraper.latest))
        return server

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
                recording.tick(self.timeline, i, per_second[-1], 1.0, live.in_flight)
                self.emit(events.make(
                    "tick", level=i, concurrency=c, second=second, output_tokens=per_second[-1],
                    in_flight=live.in_flight, completed=len(records) - failed(), failed=failed(),
                    lag_ms=round(lag.take_window() * 1000, 3), live=_live_percentiles(records),
                    server=scraper.latest))
                last_tokens = tokens
        finally:
            scrape.cancel()

    def _verdict(self, c, n, records, duration, approximate, lag, server, stopped, level_start,
                 wanted_tokens) -> dict:
        ok = [r for r in records if r.ok]
        bad = [r for r in records if not r.ok]
        counts: dict[str, int] = {}
        for r in bad:
            counts[r.error or "unknown"] = counts.get(r.error or "unknown", 0) + 1
        level = {"concurrency": c, "status": "ok", "num_prompts": n, "completed": len(ok),
                 "failed": len(bad), "errors": list(counts)[:MAX_DISTINCT_ERRORS], "error_counts": counts}
        level.update(summarize(records, duration if records else None, self.config.slo,
                               self.config.percentiles or (), level_start))
        not_sent = n - len(records)
        if not_sent:
            level["not_sent"] = not_sent
        if stopped:
            level["stopped"] = True
        level["input_len_approximate"] = approximate
        # with per-request output lengths (datasets, range ratio) "short" has no single meaning
        level["short_outputs"] = sum(1 for r in ok if (r.output_tokens or 0) < self.config.output_len) \
            if not self.config.dataset and not self.config.range_ratio else None
        level["client_lag_ms"] = {"p99": round(percentile(sorted(lag.samples), 99) * 1000, 3)
                                  if lag.samples else None,
                                  "max": round(max(lag.samples) * 1000, 3) if lag.samples else None}
        level["server"] = server   # the whole level as the server counted it (prom.level_view)
        server_tpot = [r.server_tpot_ms for r in ok if r.server_tpot_ms is not None]
        level["server_tpot_ms_mean"] = sum(server_tpot) / len(server_tpot) if server_tpot else None
        stop_time = self._operator_stop() if any(r.error in DEATH_ERRORS for r in bad) else None
        if stop_time:
            level["server_stopped"] = {"at": stop_time, "message": f"server stopped by operator at {stop_time}"}
            level["server_died"] = None
        else:
            level["server_died"] = self._death(bad)
        if level["server_died"] or (not ok and not stopped):
            level["status"] = "failed"
        elif bad or stopped or not_sent:
            level["status"] = "partial"
        return level

    def _death(self, bad: list[RequestRecord]) -> dict | None:
        """When the failures look like a dead server and it refuses connections now, say so.
        A server that ended some streams with its own error was alive as they ended: that is
        a shutdown, which `_going_away` names, even if other streams were cut."""
        if not any(r.error in DEATH_ERRORS for r in bad) or ended_in_order(bad):
            return None
        if not self._refused:
            return None
        times = [r.failed_at for r in bad if r.error in DEATH_ERRORS and r.failed_at]
        first = min(times) if times else time.time()
        since = clock(first)
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


def ended_in_order(bad: list[RequestRecord]) -> bool:
    """Every failure is the server's own error or a cut connection, and at least one is its own
    error: the server was answering while its streams ended (vLLM shutting down after a SIGTERM
    or an engine death sends some streams its error and may reset the rest), not killed outright."""
    own = [r for r in bad if (r.error or "").startswith("server error")]
    return bool(own) and all(r in own or r.error in DEATH_ERRORS for r in bad)


def exit_code(doc: dict) -> int:
    """0 when every level was ok, 3 otherwise."""
    levels = doc.get("levels") or []
    return 0 if levels and all(lv.get("status") == "ok" for lv in levels) else 3
