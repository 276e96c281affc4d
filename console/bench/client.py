"""The streaming hot loop: one aiohttp session, one coroutine per request.

Why aiohttp and no per-chunk JSON decoding: measured with
tests/bench/client_cpu.py, parsing every SSE chunk with `json.loads` (what
vLLM's benchmark client does) costs most of the client's CPU. A content chunk
is recognised instead by byte search for its content key: `"text":"`,
`"content":"` or `"reasoning_content":"` followed by anything but `"`. That
is safe because a JSON string can only contain `"` escaped as `\\"`, so
`"key":"` cannot occur inside generated text. Only lines carrying `usage`,
`timings` or `error` objects (normally the last one) are decoded in full.

Stall detection costs nothing per chunk: aiohttp's `sock_read` timeout ends a
read that received no bytes for `stall_s`; `total` is the per-request limit.
"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import aiohttp

from .metrics import RequestRecord

_COMPACT = (b'"text":"', b'"content":"', b'"reasoning_content":"')
_SPACED = (b'"text": "', b'"content": "', b'"reasoning_content": "')
_FULL_DECODE = (b'"usage":{', b'"usage": {', b'"timings"', b'"error"')
_HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}


@dataclass(slots=True)
class Live:
    """Counters the hot loop bumps for the per-second ticks."""

    tokens: int = 0
    in_flight: int = 0


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


def decode_tail(block: bytes) -> list[dict]:
    """Full JSON of the lines that carry usage, timings or errors."""
    docs = []
    for line in block.split(b"\n"):
        line = line.strip()
        if not line.startswith(b"data:") or not needs_decoding(line):
            continue
        try:
            doc = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(doc, dict):
            docs.append(doc)
    return docs


def request_body(api: str, model: str | None, prompt: str, output_len: int) -> bytes:
    body: dict = {
        "max_tokens": output_len,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.0,
    }
    if model:
        body["model"] = model
    if api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    return json.dumps(body).encode()


def describe_error(exc: BaseException, stall_s: float, timeout_s: float | None) -> str:
    """A short, stable name for what went wrong (stable so errors can be grouped)."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        if isinstance(exc.os_error, ConnectionRefusedError):
            return "connection refused"
        return f"cannot connect: {exc.os_error or exc}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "server disconnected"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "stream cut off mid-response"
    if isinstance(exc, aiohttp.SocketTimeoutError):
        return f"stalled: no bytes for {stall_s:g} s"
    if isinstance(exc, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return f"timed out after {timeout_s:g} s" if timeout_s else "timed out"
    if isinstance(exc, aiohttp.ClientOSError) and isinstance(exc.__cause__ or exc, ConnectionResetError):
        return "connection reset"
    return f"{type(exc).__name__}: {exc}"[:200]


class StreamClient:
    """Sends streaming completions and times every content chunk."""

    def __init__(self, base_url: str, api: str = "completions", *, timeout_s: float | None = None,
                 stall_s: float = 60.0):
        self.url = base_url.rstrip("/") + ("/v1/chat/completions" if api == "chat" else "/v1/completions")
        self.api = api
        self.timeout_s = timeout_s
        self.stall_s = stall_s
        self.live = Live()
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> "StreamClient":
        connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
        timeout = aiohttp.ClientTimeout(total=self.timeout_s, sock_read=self.stall_s)
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout,
                                              auto_decompress=False)
        return self

    async def __aexit__(self, *exc) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(self, index: int, body: bytes) -> RequestRecord:
        """One request; never raises for network or server trouble (it is recorded)."""
        record = RequestRecord(index=index)
        times = record.chunk_times
        live = self.live
        clock = time.perf_counter
        markers = _COMPACT
        tail: list[dict] = []
        pending = b""
        live.in_flight += 1
        start = record.start = clock()
        try:
            async with self._session.post(self.url, data=body, headers=_HEADERS) as resp:
                if resp.status != 200:
                    text = (await resp.text(errors="replace")).strip().replace("\n", " ")
                    record.error = f"HTTP {resp.status}: {text[:160]}"
                    return record
                read = resp.content.readany
                while True:
                    data = await read()
                    if not data:
                        break
                    now = clock() - start
                    cut = data.rfind(b"\n")
                    if cut < 0:
                        pending += data
                        continue
                    block = pending + data[:cut + 1] if pending else data[:cut + 1]
                    pending = data[cut + 1:]
                    if markers is _COMPACT and b'": "' in block:
                        markers = _SPACED
                    n = count_content(block, markers)
                    if n:
                        live.tokens += n
                        if n == 1:
                            times.append(now)
                        else:
                            times.extend([now] * n)
                    if needs_decoding(block):
                        tail.extend(decode_tail(block))
        except asyncio.CancelledError:
            record.error = "stopped by the operator"
            record.failed_at = time.time()
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes a record
            record.error = describe_error(exc, self.stall_s, self.timeout_s)
            record.failed_at = time.time()
            return record
        finally:
            live.in_flight -= 1
        self._finish(record, tail)
        return record

    def _finish(self, record: RequestRecord, tail: list[dict]) -> None:
        for doc in tail:
            error = doc.get("error")
            if error:
                message = error.get("message") if isinstance(error, dict) else str(error)
                record.error = f"server error: {str(message)[:160]}"
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
        else:
            record.ok = True
        if record.output_tokens_from == "usage" and record.output_tokens > len(record.chunk_times):
            self.live.tokens += record.output_tokens - len(record.chunk_times)
