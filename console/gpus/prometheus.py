"""A fleet's GPUs and servers read from Prometheus, not from each host.

Past a few dozen hosts nobody SSHes into every box: a Prometheus server
already scrapes NVIDIA's DCGM exporter on each node and the inference
servers' own `/metrics`. This reads that engine through its HTTP API.

Cost is bounded by the fleet, not the GPU count: one instant query per
refresh (fleet_query.py: short value rows, each GPU's labels only every
half minute or when a GPU is new) brings every GPU series of every host
together with each target's `up` and the time of its last scrape
(`timestamp(up)`), so staleness is judged per target. Server state is a
second query. Targets that are down are named with the host they last
reported and the time they went down (read once from `up`'s history, then
tracked).

Unknown stays unknown: a missing series is NA, a target that is down is
UNREACHABLE with its time, a target whose last scrape is older than two
scrape intervals is marked stale with its age.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, AsyncIterator

import httpx

from profiles.prom_selector import selector_matchers

from console.safe_text import clean_line

from ..fmt import clock
from . import prom_answer
from .dcgm import CANNOT_SHOW, clean, fold
from .fleet_query import FleetReader, selector
from .fleet_table import HostRow, host_row
from .flags import FlagTracker
from ..gc_pause import collector_paused
from .model import UNREACHABLE, Snapshot
from .prom_answer import AnswerShapeError
from .ranges import physical

RATE_LABEL = "gpudeck_rate"
DEFAULT_SCRAPE_S = 15.0
SERVERS_EVERY_S = 5.0      # server rates are over a minute; asking every second buys nothing
DEFAULT_TIMEOUT_S = 10.0   # one request, whole: a slower answer is no answer
MB = 1 << 20
DEFAULT_MAX_ANSWER_MB = 64  # a fleet of thousands of GPUs answers in a few MB
MAX_SCRAPE_INTERVAL_S = 86400.0
LATE_GRACE_S = 2.0         # a refresh this much past its interval is late: the data is stale from then
# Past this, an answer is decoded and folded on a worker thread: a fleet of thousands of GPUs is a
# fraction of a second of CPU per refresh, which on the event loop would hold every key that long.
OFF_LOOP_BYTES = 256 * 1024
OFF_LOOP_SERIES = 2000
# The worker thread reads answers at most this share of the time: a refresh whose reading (decode
# and fold) takes longer (ten thousand GPUs, or a machine too busy to give it the CPU) spaces the
# next ones out, up to PACE_MAX_S, rather than hold the interpreter and keep the keys waiting. The
# time spent waiting on the network does not count. The view shows how old the numbers are.
PACE_SHARE = 0.25
PACE_MAX_S = 30.0

# Server families and the series each exposes (names as each server prints them).
SERVER_GAUGES = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred"),
    "kv_cache": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage",
                 "llamacpp:kv_cache_usage_ratio"),
}
GEN_COUNTERS = {"vllm": "vllm:generation_tokens_total", "sglang": "sglang:generation_tokens_total",
                "llamacpp": "llamacpp:tokens_predicted_total"}
# llama.cpp adds a request's tokens to its counter when the request finishes (console/bench/prom.py),
# so its rate stands at 0 through a long request: with requests in flight, a 0 from it is unknown.
COUNTED_AT_REQUEST_END = {"llamacpp"}


class PrometheusError(Exception):
    """Prometheus could not be asked, or refused; the message is one line for the operator."""


@dataclass
class PromSettings:
    """How to reach one Prometheus and which part of it is this fleet."""

    url: str
    selector: str = ""                 # '{cluster="a"}' or the bare matchers
    bearer_token_env: str | None = None
    bearer_token_file: str | None = None
    basic_user: str | None = None
    basic_password_env: str | None = None
    dcgm_job: str = ".*dcgm.*"         # regex on `job` naming DCGM exporter targets
    scrape_interval_s: float | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S     # the whole of one request, first byte to last
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_MB * MB

    @property
    def matchers(self) -> str:
        return selector_matchers(self.selector)


def server_query(matchers: str) -> str:
    names = "|".join(n for group in SERVER_GAUGES.values() for n in group)
    parts = [selector(matchers, '__name__=~"' + names + '"')]
    for family, counter in GEN_COUNTERS.items():
        chosen = selector(matchers, '__name__="' + counter + '"')
        parts.append(f'label_replace(rate({chosen}[1m]), "{RATE_LABEL}", "{family}", "", "")')
    return " or ".join(parts)


def auth_for(s: PromSettings) -> tuple[dict[str, str], Any]:
    """Headers and httpx auth from the environment or a file; nothing secret is stored in the profile."""
    headers: dict[str, str] = {}
    auth = None
    if s.bearer_token_env or s.bearer_token_file:
        token = None
        if s.bearer_token_env:
            token = os.environ.get(s.bearer_token_env)
            if not token:
                raise PrometheusError(f"bearer token: environment variable {s.bearer_token_env} is not set")
        else:
            try:
                token = open(os.path.expanduser(s.bearer_token_file)).read().strip()
            except OSError as exc:
                raise PrometheusError(f"bearer token: cannot read {s.bearer_token_file}: "
                                      f"{exc.strerror or exc}") from None
        headers["Authorization"] = f"Bearer {token}"
    if s.basic_user:
        password = os.environ.get(s.basic_password_env or "", "")
        if s.basic_password_env and not password:
            raise PrometheusError(f"basic auth: environment variable {s.basic_password_env} is not set")
        auth = httpx.BasicAuth(s.basic_user, password)
    return headers, auth


class PromClient:
    """The few calls of Prometheus's HTTP API that gpudeck makes.

    Every request has one overall deadline (`timeout_s`, from the first byte
    sent to the last byte read: a peer trickling a byte a second never trips
    a per-read timeout) and its body is read as a stream under a size cap
    (`max_answer_bytes`), so neither a slow nor a huge answer can hold the
    fleet view. Answers are shape-checked (prom_answer); `unreadable` counts
    the series skipped since the caller last took the count.
    """

    def __init__(self, settings: PromSettings, transport: httpx.AsyncBaseTransport | None = None):
        self.settings = settings
        headers, auth = auth_for(settings)
        self.base = settings.url.rstrip("/")
        self._http = httpx.AsyncClient(headers=headers, auth=auth, timeout=settings.timeout_s, transport=transport)
        self.unreadable = 0
        self.worker_busy_s = 0.0     # time spent reading answers on worker threads, all told

    async def close(self) -> None:
        await self._http.aclose()

    def take_unreadable(self) -> int:
        count, self.unreadable = self.unreadable, 0
        return count

    async def _get(self, path: str, params: dict | None = None, reader=None) -> Any:
        """The answer's `data`, or `reader(data)`; a big answer is read on a worker thread."""
        deadline = self.settings.timeout_s
        try:
            async with asyncio.timeout(deadline):   # keeps a cancel that lands with the answer (wait_for on 3.11 drops it)
                body, status = await self._fetch(path, params)
        except (TimeoutError, httpx.TimeoutException):
            raise PrometheusError(f"{self.base}: no whole answer within {deadline:g} s") from None
        if len(body) > OFF_LOOP_BYTES:
            return await asyncio.to_thread(self._read_big, path, body, status, reader)
        return self._read(path, body, status, reader)

    def _read_big(self, path: str, body: bytearray, status: int, reader) -> Any:
        return self.off_loop(self._read, path, body, status, reader)

    def off_loop(self, fn, *args):
        """`fn(*args)` as run on a worker thread: the collector paused, its time counted."""
        started = time.perf_counter()
        try:
            with collector_paused():
                return fn(*args)
        finally:
            self.worker_busy_s += time.perf_counter() - started

    def _read(self, path: str, body: bytearray, status: int, reader) -> Any:
        data = self._decode(path, body, status)
        return data if reader is None else reader(data)

    async def _fetch(self, path: str, params: dict | None) -> tuple[bytearray, int]:
        url = self.base + path
        cap = self.settings.max_answer_bytes
        try:
            async with self._http.stream("GET", url, params=params) as response:
                if response.status_code in (401, 403):
                    raise PrometheusError(f"{self.base}: authentication refused (HTTP {response.status_code})")
                length = response.headers.get("content-length", "")
                if length.isdigit() and int(length) > cap:
                    raise PrometheusError(_too_big(self.base + path, cap))
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > cap:
                        raise PrometheusError(_too_big(self.base + path, cap))
                status = response.status_code
        except httpx.TimeoutException:
            raise
        except httpx.HTTPError as exc:
            raise PrometheusError(f"{self.base}: cannot connect ({_reason(exc)})") from None
        return body, status

    def _decode(self, path: str, body: bytearray, status: int) -> Any:
        try:
            doc = json.loads(body)     # bytearray as it came: no copy
        except (ValueError, RecursionError):
            raise PrometheusError(f"{self.base}{path}: HTTP {status}, not a Prometheus API answer "
                                  "(is this the Prometheus URL?)") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            error = doc.get("error") if isinstance(doc, dict) else None
            shown = clean_line(error)[:200] if isinstance(error, str) and error else f"HTTP {status}"
            raise PrometheusError(f"{self.base}{path}: {shown}")
        return doc.get("data")

    def _counted(self, reader, data: Any) -> list:
        try:
            counted = reader(data)
        except AnswerShapeError as exc:
            raise PrometheusError(f"{self.base}: {exc}") from None
        self.unreadable += counted.unreadable
        return counted.rows

    async def query(self, expr: str, then=None) -> Any:
        """Instant vector -> [(labels, value, eval time)]; unreadable series skipped and counted.

        `then(rows)`, when given, runs where the answer was read (on the worker thread for a big
        one) and its result is returned instead: the rows, a million objects at ten thousand GPUs,
        are gone before the collector runs again."""
        def read(data: Any) -> Any:
            rows = self._counted(prom_answer.vector, data)
            return rows if then is None else then(rows)

        return await self._get("/api/v1/query", {"query": expr}, read)

    async def query_answer(self, expr: str, reader) -> Any:
        """Instant vector, its `data` read by `reader` itself (the fleet's DCGM answer, whose rows are
        checked and sorted out in one pass); the answer's shape refused is a PrometheusError."""
        def read(data: Any) -> Any:
            try:
                return reader(data)
            except AnswerShapeError as exc:
                raise PrometheusError(f"{self.base}: {exc}") from None

        return await self._get("/api/v1/query", {"query": expr}, read)

    async def query_range(self, expr: str, start: float, end: float, step: float) -> list[tuple[dict, list]]:
        return await self._get("/api/v1/query_range", {"query": expr, "start": start, "end": end, "step": step},
                               partial(self._counted, prom_answer.matrix))

    async def targets(self) -> list[dict]:
        return await self._get("/api/v1/targets", {"state": "active"}, partial(self._counted, prom_answer.targets))


def _too_big(where: str, cap: int) -> str:
    return (f"{where}: answer larger than {cap / MB:g} MB, refused "
            "(raise max_answer_mb in the profile's [prometheus] table to allow it)")


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:160]


def parse_duration(text: str) -> float | None:
    """Prometheus durations as the targets API gives them ('1s', '15s', '1m30s')."""
    total, matched = 0.0, False
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text or ""):
        matched = True
        total += float(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    return total if matched else None


@dataclass
class Target:
    """One scrape target as the fleet view needs it."""

    instance: str
    job: str
    up: bool
    host: str | None = None           # the Hostname its DCGM series carried
    last_scrape: float | None = None
    down_since: float | None = None


@dataclass
class ServerRow:
    """One inference server instance seen through Prometheus."""

    instance: str
    job: str
    family: str
    model: str | None = None
    running: float | None = None
    waiting: float | None = None
    kv_cache: float | None = None      # 0..1
    gen_tok_s: float | None = None
    # The rate is of a counter that moves when requests finish (llama.cpp): it lags, and while
    # requests are in flight a 0 from it means nothing (gen_tok_s is None then).
    counted_at_request_end: bool = False

    def to_json(self) -> dict:
        return {"instance": self.instance, "job": self.job, "family": self.family, "model": self.model,
                "running": self.running, "waiting": self.waiting, "kv_cache": self.kv_cache,
                "gen_tok_s": self.gen_tok_s,
                **({"gen_tok_s_counted": "at request end"} if self.counted_at_request_end else {})}


@dataclass
class FleetSample:
    """Everything one refresh knows: one Snapshot per host, the servers, the targets.

    `rows` is the per-host summary of `hosts`, in the same order, built once
    by the refresh that read them (views sort and filter it, never rebuild it)."""

    taken_at: float
    hosts: list[Snapshot] = field(default_factory=list)
    servers: list[ServerRow] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    error: str | None = None           # Prometheus itself could not be read
    simulated: bool = False
    unreadable: int = 0                # series skipped because their shape was wrong
    rows: list[HostRow] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.hosts and not self.rows:
            self.rows = [host_row(h, self.taken_at) for h in self.hosts]

    @property
    def unreadable_line(self) -> str | None:
        """"3 series unreadable", said wherever the sample is shown; None when every series was read."""
        return f"{self.unreadable} series unreadable (wrong shape in Prometheus's answer)" \
            if self.unreadable else None

    def to_json(self, now: float | None = None) -> dict:
        now = time.time() if now is None else now
        return {"source": "prometheus", "taken_at": self.taken_at, "error": self.error,
                "unreadable_series": self.unreadable,
                "hosts": [h.to_json(now=now) for h in self.hosts],
                "servers": [s.to_json() for s in self.servers],
                "cannot_show": list(CANNOT_SHOW),
                **({"simulated": True} if self.simulated else {})}


class PrometheusFleet:
    """Reads a fleet's GPUs from Prometheus; `sample()` once, or iterate `samples()`."""

    def __init__(self, settings: PromSettings, *, simulated: bool = False,
                 transport: httpx.AsyncBaseTransport | None = None):
        self.settings = settings
        self.simulated = simulated
        self.client = PromClient(settings, transport)
        self.matchers = settings.matchers
        self._trackers: dict[str, FlagTracker] = {}
        self._reader = FleetReader()
        self._host_of_instance: dict[str, str] = {}
        self._down_since: dict[str, float] = {}
        self._intervals: dict[str, float] = {}
        self._intervals_at = 0.0
        self._job_re = re.compile(settings.dcgm_job)
        self._servers_at = float("-inf")
        self._server_rows: list[ServerRow] = []
        self._server_unreadable = 0
        self.answered_at: float | None = None     # monotonic: when the last refresh ended
        self.asking_since: float | None = None    # monotonic: when the refresh in progress began
        self.pace_s = 0.0                         # the time between refreshes `samples` keeps (see PACE_SHARE)

    async def close(self) -> None:
        await self.client.close()

    def late_by(self, interval_s: float, now: float | None = None) -> float | None:
        """Seconds since the last refresh ended when the next one is overdue (it should have ended
        within `interval_s` plus a grace), else None. The data is stale from that moment, not from
        when the late refresh finally completes."""
        if self.answered_at is None:
            return None
        now = time.monotonic() if now is None else now
        waited = now - self.answered_at
        return waited if waited > max(interval_s, self.pace_s) + LATE_GRACE_S else None

    async def sample(self) -> FleetSample:
        self.asking_since = time.monotonic()
        try:
            return await self._sample()
        finally:
            self.answered_at = time.monotonic()
            self.asking_since = None

    async def _sample(self) -> FleetSample:
        now = time.time()
        self.client.take_unreadable()
        try:
            folded = await self._ask_gpus(now)
            for _ in range(2):     # a GPU whose identity is not known yet, then GPUs sharing a short key
                if folded is not None:
                    break
                self.client.take_unreadable()     # asked again, identities included (keyed the long way)
                folded = await self._ask_gpus(now)
            if folded is None:
                raise PrometheusError("the DCGM answer named GPUs it gave no identity for")
            snaps, ups, scraped, count = folded
            await self._refresh_intervals(now)
        except PrometheusError as exc:
            return FleetSample(taken_at=now, error=str(exc), simulated=self.simulated)
        targets = []
        for instance, (up, job) in sorted(ups.items()):
            is_dcgm = instance in self._host_of_instance or bool(self._job_re.fullmatch(job))
            if not is_dcgm:
                continue
            target = Target(instance=instance, job=job, up=up, last_scrape=scraped.get(instance))
            if up:
                self._down_since.pop(instance, None)
            else:
                target.down_since = await self._down_since_for(instance, now)
            target.host = self._host_of_instance.get(instance)
            targets.append(target)
        if count > OFF_LOOP_SERIES:
            hosts, host_rows = await asyncio.to_thread(self.client.off_loop, self._finish, snaps, targets, now)
        else:
            hosts, host_rows = self._finish(snaps, targets, now)
        unreadable = self.client.take_unreadable()
        if now - self._servers_at >= SERVERS_EVERY_S:
            self._servers_at = now
            try:
                self._server_rows = await self._servers()
            except PrometheusError:
                self._server_rows = []
            self._server_unreadable = self.client.take_unreadable()
        return FleetSample(taken_at=now, hosts=hosts, servers=self._server_rows, targets=targets,
                           simulated=self.simulated, unreadable=unreadable + self._server_unreadable,
                           rows=host_rows)

    async def _ask_gpus(self, now: float):
        return await self.client.query_answer(self._reader.query(self.matchers),
                                              lambda data: self._fold_answer(data, now))

    def _fold_answer(self, data: Any, now: float) -> tuple[dict[str, Snapshot], dict, dict, int] | None:
        """The DCGM query's answer -> (one Snapshot per host, each target's `up` and job, its last
        scrape, how many rows there were); None when it names a GPU whose identity must be asked."""
        read = self._reader.read(data, now, self._host_of_instance)
        if read is None:
            return None
        self.client.unreadable += read.unreadable
        snaps = fold(read.series, gpus=read.gpus, taken_at=now, simulated=self.simulated)
        return snaps, read.ups, read.scraped, read.rows

    def _finish(self, snaps: dict[str, Snapshot], targets: list[Target], now: float) -> tuple[list, list]:
        """Flags and staleness marked, down targets added: the hosts in name order and their rows."""
        serving: dict[str | None, list[Target]] = {}
        for target in targets:
            if target.up:
                serving.setdefault(target.host, []).append(target)
        for snap in snaps.values():
            self._mark(snap, serving.get(snap.host, []), now)
        for target in targets:
            if not target.up:
                name = target.host or clean(target.instance)     # label text from outside: made visible
                since = target.down_since
                when = clock(since) if since else "an unknown time"
                snaps[name] = Snapshot(state=UNREACHABLE, host=name, source="dcgm", simulated=self.simulated,
                                       message=f"exporter {clean(target.instance)} down since {when}",
                                       taken_at=since)
        hosts = [snaps[k] for k in sorted(snaps)]
        return hosts, [host_row(h, now) for h in hosts]

    def _mark(self, snap: Snapshot, mine: list[Target], now: float) -> None:
        """Flags with per-host streaks; stale when the host's last scrape (of `mine`, the targets
        up that serve it) is older than two intervals."""
        tracker = self._trackers.get(snap.host or "?")
        if tracker is None:
            tracker = self._trackers[snap.host or "?"] = FlagTracker()
        tracker.apply(snap)
        if not mine:
            return
        last = min((t.last_scrape for t in mine if t.last_scrape is not None), default=None)
        interval = max(self._interval(t.instance) for t in mine)
        if last is not None:
            snap.taken_at = last
            age = now - last
            if age > 2 * interval:
                snap.sample_stale = True
                snap.stale_reason = f"last scrape {age:.0f} s ago (scrape interval {interval:g} s)"

    def _interval(self, instance: str) -> float:
        return self._intervals.get(instance) or self.settings.scrape_interval_s or DEFAULT_SCRAPE_S

    async def _refresh_intervals(self, now: float) -> None:
        """Each target's scrape interval, from the targets API once a minute."""
        if now - self._intervals_at < 60:
            return
        self._intervals_at = now
        try:
            for t in await self.client.targets():
                interval = parse_duration(t["scrapeInterval"])
                instance = t["labels"].get("instance")
                if instance and interval and 0 < interval <= MAX_SCRAPE_INTERVAL_S:
                    self._intervals[instance] = interval
        except PrometheusError:
            pass

    async def _down_since_for(self, instance: str, now: float) -> float | None:
        """When the target went down: tracked once seen, else read from `up`'s last hour."""
        if instance in self._down_since:
            return self._down_since[instance]
        step = max(1.0, self._interval(instance))
        since = None
        try:
            escaped = instance.replace("\\", "\\\\").replace('"', '\\"')
            result = await self.client.query_range(f'up{{instance="{escaped}"}}', now - 3600, now, step)
            for _labels, values in result:
                for at, value in values:
                    if not now - 86400 <= at <= now + 60:    # a time this range query cannot hold
                        continue
                    if value == 1.0:
                        since = None
                    elif since is None:
                        since = at
        except PrometheusError:
            since = None
        self._down_since[instance] = since if since is not None else now
        if instance not in self._host_of_instance:
            try:   # name it by the Hostname its series carried before it went down
                rows = await self.client.query(
                    f'count by (Hostname) (last_over_time(DCGM_FI_DEV_GPU_UTIL{{instance="{escaped}"}}[1h]))')
                names = [labels.get("Hostname") for labels, _v, _t in rows if labels.get("Hostname")]
                if names:
                    self._host_of_instance[instance] = clean(names[0])
            except PrometheusError:
                pass
        return self._down_since[instance]

    async def _servers(self) -> list[ServerRow]:
        rows: dict[tuple, ServerRow] = {}
        for labels, value, _at in await self.client.query(server_query(self.matchers)):
            instance, job = labels.get("instance", "?"), labels.get("job", "")
            model = labels.get("model_name") or labels.get("model")
            family = labels.get(RATE_LABEL) or labels.get("__name__", "").split(":", 1)[0]
            row = rows.setdefault((instance, family, model), ServerRow(instance, job, family, model))
            if labels.get(RATE_LABEL):
                rate = physical("gen_tok_s", value)
                if rate is not None:
                    row.gen_tok_s = physical("gen_tok_s", (row.gen_tok_s or 0.0) + rate)
                continue
            name = labels.get("__name__", "")
            for attr, names in SERVER_GAUGES.items():
                if name in names and getattr(row, attr) is None:
                    setattr(row, attr, physical(attr, value))
        for row in rows.values():
            if row.family in COUNTED_AT_REQUEST_END:
                row.counted_at_request_end = True
                if row.gen_tok_s == 0 and (row.running is None or row.running > 0):
                    row.gen_tok_s = None     # requests in flight (or maybe): their tokens are not counted yet
        return sorted(rows.values(), key=lambda r: (r.instance, r.family, r.model or ""))

    async def samples(self, interval_s: float = 1.0) -> AsyncIterator[FleetSample]:
        """A refresh every `interval_s`, or less often when reading one takes more than PACE_SHARE of that."""
        while True:
            started = time.monotonic()
            spent = self.client.worker_busy_s
            sample = await self.sample()
            cost = self.client.worker_busy_s - spent
            self.pace_s = max(interval_s, min(cost / PACE_SHARE, max(interval_s, PACE_MAX_S)))
            yield sample
            await asyncio.sleep(max(0.0, self.pace_s - (time.monotonic() - started)))

    async def history(self, expr: str, seconds: float = 300, step: float = 5) -> list[tuple[dict, list]]:
        """Sparkline data: one range query for the whole fleet."""
        now = time.time()
        return await self.client.query_range(expr, now - seconds, now, step)


@dataclass
class CheckResult:
    ok: bool
    line: str
    doc: dict


async def check(settings: PromSettings) -> CheckResult:
    """`profiles check` for a Prometheus profile: answers? how many DCGM targets up? how many GPUs?"""
    fleet = PrometheusFleet(settings)
    started = time.monotonic()
    try:
        try:
            await fleet.client._get("/api/v1/status/buildinfo")
        except PrometheusError as exc:
            return CheckResult(False, str(exc), {"ok": False, "error": str(exc)})
        latency_ms = (time.monotonic() - started) * 1000
        sample = await fleet.sample()
        if sample.error:
            return CheckResult(False, sample.error, {"ok": False, "error": sample.error})
        up = sum(1 for t in sample.targets if t.up)
        down = len(sample.targets) - up
        gpus = sum(len(h.gpus) for h in sample.hosts)
        doc = {"ok": True, "latency_ms": round(latency_ms, 1), "dcgm_targets_up": up, "dcgm_targets_down": down,
               "hosts": len(sample.hosts), "gpus": gpus, "unreadable_series": sample.unreadable}
        line = (f"Prometheus answers in {latency_ms:.0f} ms · {up} DCGM target(s) up"
                + (f", {down} down" if down else "") + f" · {gpus} GPU(s) on {len(sample.hosts)} host(s)")
        if sample.unreadable_line:
            line += f" · {sample.unreadable_line}"
        if not sample.targets:
            line += " · no DCGM exporter target found (check the selector and dcgm_job)"
        return CheckResult(True, line, doc)
    finally:
        await fleet.close()
