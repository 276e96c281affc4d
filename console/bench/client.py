"""The streaming hot loop: kept-alive connections, one callback per read.

How the CPU goal is met (measured by tests/bench/client_cpu.py):

- The HTTP exchange is a bare asyncio protocol (http1.py): body bytes are
  handled inside `data_received` and stamped there, so no coroutine wakes up
  per chunk; the request's coroutine only waits for the end.
- No JSON decoding per chunk. A content chunk is recognised by byte search
  for `"text":"`, `"content":"` or `"reasoning_content":"` followed by
  anything but `"`. That is safe: inside a JSON string a `"` is always
  escaped as `\\"`, so `"key":"` cannot occur in generated text. Only lines
  carrying a `usage` or `timings` object or an `error` (normally the last
  one) are decoded in full.
- Stall detection and the per-request timeout cost nothing per chunk: one
  watchdog task checks every open request once a second.
- A server that stops sending on every stream at once is `hung`: when no
  open request got a byte for the stall time, the watchdog ends them all
  together (rather than one stall period after another) and says so. A
  stalled request is ended alone only while another one is seen getting
  bytes since the previous look.
"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

from .http1 import Pool, ResponseError, StreamingResponse, Target
from .metrics import RequestRecord
from .redact import Redactor

_COMPACT = (b'"text":"', b'"content":"', b'"reasoning_content":"')
_SPACED = (b'"text": "', b'"content": "', b'"reasoning_content": "')
# lines decoded whole: usage, llama.cpp's timings, an error, and a request the server aborted
# (vLLM and sglang end a stream they abort, e.g. shutting down after a SIGTERM, with an
# ordinary-looking last event whose finish_reason is "abort", then [DONE])
_FULL_DECODE = (b'"usage":{', b'"usage": {', b'"timings"', b'"error"', b'"abort"')
ABORTED = 'server error: the server aborted the request (finish_reason "abort")'
STOPPED = "stopped by the operator"
HUNG = "server hung"
LOOK_S = 1.0          # the watchdog looks at every open request this often


def default_timeout(output_len: int) -> float:
    """A request's overall deadline when none is given: 120 s plus 0.5 s per output token."""
    return 120.0 + 0.5 * output_len


@dataclass(slots=True)
class Live:
    """Counters the hot loop bumps for the per-second ticks."""

    tokens: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0


def count_content(block: bytes, markers: tuple[bytes, ...]) -> int:
    """Content-carrying SSE events in complete lines, by byte search."""
    n = 0
    for marker in markers:
        hits = block.count(marker)
        if hits:
            n += hits - block.count(marker + b'"')
    return n


def needs_decoding(block: bytes) -> bool:
    return any(key in block for key in _FULL_DECODE)


def _lines_holding(block: bytes, keys: tuple[bytes, ...]) -> list[bytes]:
    """The lines of `block` that hold any of `keys`, in order, each once. Found by byte search from
    each hit out to its line's ends: a response that arrives whole is one block of some seventy
    lines, and splitting it all to look at each line cost more than the rest of reading it."""
    spans: dict[int, int] = {}
    for key in keys:
        at = block.find(key)
        while at >= 0:
            start = block.rfind(b"\n", 0, at) + 1
            end = block.find(b"\n", at)
            if end < 0:
                end = len(block)
            spans[start] = end
            at = block.find(key, end)
    return [block[start:spans[start]] for start in sorted(spans)]


def decode_tail(block: bytes) -> list[dict]:
    """Full JSON of the lines that carry usage, timings or errors."""
    docs = []
    for line in _lines_holding(block, _FULL_DECODE):
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        try:
            doc = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(doc, dict):
            docs.append(doc)
    return docs


def request_body(api: str, model: str | None, prompt: str | list, output_len: int,
                 options: dict | None = None) -> bytes:
    """One streaming request. `prompt` is text, or chat messages (chat API only).

    `options` may hold temperature, top_p and extra_body (merged last, so it
    can set or override any field).
    """
    options = options or {}
    body: dict = {
        "max_tokens": output_len,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.0 if options.get("temperature") is None else options["temperature"],
    }
    if options.get("top_p") is not None:
        body["top_p"] = options["top_p"]
    if model:
        body["model"] = model
    if api == "chat":
        body["messages"] = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    body.update(options.get("extra_body") or {})
    return json.dumps(body).encode()


class _SSE:
    """Per-request SSE state, fed from the protocol's data_received."""

    __slots__ = ("times", "live", "markers", "pending", "tail", "start")

    def __init__(self, times: list[float], live: Live, start: float):
        self.times = times
        self.live = live
        self.markers = _COMPACT
        self.pending = b""
        self.tail: list[dict] = []
        self.start = start

    def feed(self, data: bytes, now: float) -> bool:
        """Counts the content chunks of the whole lines; true once the `data: [DONE]` line came."""
        cut = data.rfind(b"\n")
        if cut < 0:
            self.pending += data
            return False
        if self.pending:
            block = self.pending + data[:cut + 1]
        else:
            block = data if cut == len(data) - 1 else data[:cut + 1]
        self.pending = data[cut + 1:]
        markers = self.markers
        if markers is _COMPACT and b'": "' in block:
            markers = self.markers = _SPACED
        n = 0
        for marker in markers:
            hits = block.count(marker)
            if hits:
                n += hits - block.count(marker + b'"')
        if n:
            self.live.tokens += n
            if n == 1:
                self.times.append(now - self.start)
            else:
                self.times.extend([now - self.start] * n)
        for key in _FULL_DECODE:
            if key in block:
                self.tail.extend(decode_tail(block))
                break
        return b"[DONE]" in block and _done_line(block)


def _done_line(block: bytes) -> bool:
    """Whether a line of `block` is the stream's end, `data: [DONE]` (never inside a JSON line:
    a JSON string holds no raw newline)."""
    return any(line.strip() in (b"data: [DONE]", b"data:[DONE]") for line in _lines_holding(block, (b"[DONE]",)))


def _aborted(doc: dict) -> bool:
    """An event whose choice ended with finish_reason "abort": the server gave the request up."""
    choices = doc.get("choices")
    return isinstance(choices, list) and any(
        isinstance(choice, dict) and choice.get("finish_reason") == "abort" for choice in choices)


class _Stale(Exception):
    """A kept-alive connection the server had closed: nothing was sent back on it."""


def _connect_failed(task: asyncio.Task, done: asyncio.Future) -> None:
    """Hand a failed connect to the request's future (the request reads only that one)."""
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None and not done.done():
        done.set_exception(exc)


class StreamClient:
    """Sends streaming completions and times every content chunk."""

    def __init__(self, base_url: str, api: str = "completions", *, timeout_s: float | None = None,
                 stall_s: float = 60.0, headers: dict[str, str] | None = None, keep_alive: bool = True):
        self.target = Target(base_url)
        self.path = "/v1/chat/completions" if api == "chat" else "/v1/completions"
        self.api = api
        self.timeout_s = timeout_s
        self.stall_s = stall_s
        self.headers = headers
        self.redactor = Redactor(headers)    # a server may echo the API key in an error body
        self.live = Live()
        self.hung: str | None = None          # why the server counts as hung, once it does
        self.hung_at: float | None = None     # wall-clock time of the last byte before the hang
        self._open: dict[StreamingResponse, float] = {}
        self._looked: float | None = None     # the watchdog's last look
        self._heard = 0.0                     # the last byte of a request that has ended
        self._watchdog: asyncio.Task | None = None
        self.pool = Pool() if keep_alive else None

    async def __aenter__(self) -> "StreamClient":
        self._watchdog = asyncio.create_task(self._watch())
        return self

    async def __aexit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
            await asyncio.gather(self._watchdog, return_exceptions=True)

    async def _watch(self) -> None:
        """Once a second: end requests that stalled or ran past their time; spot a hung server."""
        while True:
            await asyncio.sleep(LOOK_S)
            self.check(time.perf_counter())

    def check(self, now: float) -> None:
        open_now = list(self._open.items())
        if open_now and all(now - proto.last_bytes > self.stall_s for proto, _ in open_now):
            # every stream is silent: the server, not one request, stopped answering
            latest = max(proto.last_bytes for proto, _ in open_now)
            self.hung_at = time.time() - (now - latest)
            self.hung = f"{HUNG}: no bytes on any of {len(open_now)} streams for {self.stall_s:g} s"
            for proto, _ in open_now:
                proto.abort(HUNG)
            if self.pool is not None:
                self.pool.close()
            return
        # A stream silent past the limit is ended alone only while the server is seen answering
        # another one: a byte since the last look. Streams that are only less silent (a busy client
        # opened them later, or their last token came later) are not proof of life: ending the
        # stalled one would put a fresh silent request in its place and the hang would be judged one
        # stall period at a time. Left open, the silent streams are all past the limit at a later
        # look (hung), or some stream gets a byte and the stalled one is ended then.
        since = self._looked if self._looked is not None else now - LOOK_S
        self._looked = now
        heard = self._heard > since or any(proto.answered and proto.last_bytes > since for proto, _ in open_now)
        for proto, started in open_now:
            if now - proto.last_bytes > self.stall_s:
                if heard:
                    proto.abort(f"stalled: no bytes for {self.stall_s:g} s")
            elif self.timeout_s and now - started > self.timeout_s:
                proto.abort(f"timed out after {self.timeout_s:g} s")

    async def send(self, index: int, body: bytes, queued_since: float | None = None) -> RequestRecord:
        """One request; never raises for network or server trouble (it is recorded).

        `queued_since` is when the request was due (open-loop load): the wait
        before it could be sent is kept apart from its TTFT.
        """
        record = RequestRecord(index=index)
        if self.hung:
            return self._failed(record, HUNG)
        loop = asyncio.get_running_loop()
        live = self.live
        live.in_flight += 1
        if live.in_flight > live.peak_in_flight:
            live.peak_in_flight = live.in_flight
        start = record.start = time.perf_counter()
        if queued_since is not None:
            record.queue_s = max(0.0, start - queued_since)
        sse = _SSE(record.chunk_times, live, start)
        request = self.target.request(self.path, body, self.headers, keep_alive=self.pool is not None)
        reused = self.pool.take() if self.pool is not None else None
        try:
            try:
                proto, status = await self._exchange(loop, request, sse, reused)
            except _Stale:
                # the server had closed that kept-alive connection: nothing was received, so
                # sending once more on a fresh connection changes nothing the run measures
                proto, status = await self._exchange(loop, request, sse, None)
        except asyncio.CancelledError:
            # Cancelling a send ends the request and still returns its record, so a
            # stopped level keeps every request it started.
            return self._failed(record, STOPPED)
        except ConnectionRefusedError:
            return self._failed(record, "connection refused")
        except ResponseError as exc:
            return self._failed(record, str(exc))
        except OSError as exc:
            return self._failed(record, f"cannot connect: {exc.strerror or exc}")
        finally:
            live.in_flight -= 1
        if status != 200:
            text = proto.error_body.decode("utf-8", "replace").strip().replace("\n", " ")
            return self._failed(record, f"HTTP {status}: {self.redactor.text(text)[:160]}")
        self._finish(record, sse.tail)
        return record

    async def _exchange(self, loop, request: bytes, sse: "_SSE", transport) -> tuple[StreamingResponse, int]:
        """One request/response on `transport` (a pooled connection) or on a new connection."""
        done = loop.create_future()
        proto = StreamingResponse(request, sse.feed, done)
        if self.pool is not None:
            proto.release = self.pool.give
        self._open[proto] = time.perf_counter()
        connect = None
        try:
            if transport is not None:
                transport.set_protocol(proto)
                proto.connection_made(transport)
            else:
                # The connect runs beside the response future, so the watchdog's stall,
                # timeout and hang verdicts also end a request whose connect never completes.
                target = self.target
                connect = loop.create_task(
                    loop.create_connection(lambda: proto, target.host, target.port, ssl=target.ssl_context))
                connect.add_done_callback(lambda task: _connect_failed(task, done))
            try:
                return proto, await done
            except asyncio.CancelledError:
                proto.abort(STOPPED)
                raise
            except (ResponseError, OSError) as exc:
                if transport is not None and proto.status is None and not sse.times and \
                        str(exc) in ("server disconnected", "connection reset"):
                    raise _Stale() from None
                raise
        finally:
            if self._open.pop(proto, None) is not None and proto.answered:
                self._heard = max(self._heard, proto.last_bytes)
            if connect is not None and not connect.done():
                connect.cancel()

    @staticmethod
    def _failed(record: RequestRecord, message: str) -> RequestRecord:
        record.error = message
        record.failed_at = time.time()
        return record

    def _finish(self, record: RequestRecord, tail: list[dict]) -> None:
        for doc in tail:
            error = doc.get("error")
            if error:
                message = error.get("message") if isinstance(error, dict) else str(error)
                redactor = getattr(self, "redactor", None)
                message = redactor.text(str(message)) if redactor is not None else str(message)
                record.error = f"server error: {message[:160]}"
            elif record.error is None and _aborted(doc):
                record.error = ABORTED
            usage = doc.get("usage")
            if isinstance(usage, dict):
                if isinstance(usage.get("completion_tokens"), int):
                    record.output_tokens = usage["completion_tokens"]
                    record.output_tokens_from = "usage"
                if isinstance(usage.get("prompt_tokens"), int):
                    record.input_tokens = usage["prompt_tokens"]
            timings = doc.get("timings")
            if isinstance(timings, dict) and isinstance(timings.get("predicted_per_token_ms"), (int, float)):
                record.server_tpot_ms = float(timings["predicted_per_token_ms"])
        if record.output_tokens is None:
            record.output_tokens = len(record.chunk_times)
        if record.error is None and not record.chunk_times:
            record.error = "no content in the response"
        if record.error:
            record.failed_at = time.time()
            return
        record.ok = True
        if record.output_tokens_from == "usage" and record.output_tokens > len(record.chunk_times):
            self.live.tokens += record.output_tokens - len(record.chunk_times)
