"""Client CPU per streamed token: gpudeck's hot loop against a minimal vLLM-style client.

Starts a fast local SSE source (a raw asyncio HTTP server in its own process
that streams OpenAI-style completion chunks at a fixed per-stream rate), then
runs each client in a fresh process at 64, 256 and 512 concurrent streams and
prints client CPU-seconds (user + sys) per 10,000 tokens, the ratio
gpudeck / vLLM-style, and whether the offered rate was sustained.

    .venv/bin/python tests/bench/client_cpu.py [--streams 64,256,512] [--tokens 64] [--interval-ms 40]

`--interval-ms 0` makes the source unpaced: each response is written whole
at once and arrives in one or two reads, so per-request costs dominate.
`--spread N` sends each paced round in N slices across the interval.
`vllm-style` opens a connection per request; `vllm-pooled` keeps them alive,
as vLLM's current benchmark session does. `gpudeck` runs on the sweep's own
loop (uvloop when installed), `gpudeck-asyncio` never on uvloop, and
`gpudeck-base` runs another checkout (`--base DIR`, e.g. the code before a
change) for a before/after in the same run. Every client is run `--repeats`
times, in alternating order; the summary gives the median ratio and its spread.

Figures (2-core VM shared with other engineers' jobs, 2026-12-01; ratio =
CPU-seconds per 10k tokens of the client / of vllm-style; median of 3
alternated runs, min-max in brackets; "before" is the client before the
in-place read path and uvloop):

    paced, 20 ms a token, 64 tokens x 2 rounds:
        512 streams (load 7-10):   uvloop 0.37 (0.32-0.46), asyncio 0.48 (0.41-0.59),
                                   before 0.47 (0.47-0.64), vllm-pooled 1.22 (0.86-1.31)
            CPU s/10k tok:         uvloop 0.065-0.066, asyncio 0.083-0.085, before 0.083-0.095
        256 streams (load 4.5-7):  uvloop 0.23 (0.22-0.23), asyncio 0.27 (0.27-0.29),
                                   before 0.31 (0.29-0.31), vllm-pooled 0.98 (0.91-1.00)
        the median ITL gpudeck measured: 19.8-20.1 ms at the 20 ms source, every variant
        a 1 ms sleep before each poll (tried, left out), 256 streams, --spread 10:
                                   0.40 (0.38-0.49) against 0.37 (0.34-0.43) without
    2026-12-02, a quiet machine (load 0.0-0.2), asyncio loop (uvloop not installed), 512 streams:
                                   0.29 (0.28-0.31), 0.087-0.100 CPU s/10k tok against
                                   vllm-style 0.305-0.319; ITL p50 20.3-20.6 ms
    unpaced, 256 streams (load 12-15):
        64 tokens x 10 rounds:     uvloop 0.29 (0.28-0.30), asyncio 0.29 (0.28-0.31),
                                   before 0.29 (0.27-0.30): no significant difference;
                                   vllm-pooled 0.80 (0.76-0.80)
        4 tokens x 40 rounds:      uvloop 0.13 (0.12-0.14), before 0.13 (0.12-0.14): no
                                   significant difference; vllm-pooled 0.61 (0.54-0.62)

    2026-12-07, unpaced, 512 streams, 64 tokens x 2 rounds, loaded machine (load 11-12), asyncio:
                                   0.25 (0.25-0.29), before 0.34 (0.32-0.36), vllm-pooled 0.87
                                   (0.74-0.92); "before" is the client that split every whole
                                   response into lines to find its usage and [DONE] lines (about
                                   40% of the client's profile), now found by byte search
        4 tokens x 10 rounds (load 5.5-7.3): 0.18 (0.17-0.18), before 0.20 (0.18-0.20),
                                   vllm-pooled 0.55 (0.55-0.57)

So: uvloop is the gain that shows (a fifth to a quarter of the client's CPU
paced); the in-place read path is worth about a tenth at 256 paced streams
and within the spread elsewhere; unpaced, the client was already far below
its peer. This measures the streaming only; a sweep's end-of-level work
(summaries, the request file) comes on top.

What brought the unpaced case down earlier: kept-alive connections
(connect, send and close of a new socket per request were most of a short
request's cost) and one body callback per read instead of one per chunk.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _alternate import alternate  # this script's folder

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- the SSE source


def _event(text: str, final: bool = False, tokens: int = 0) -> bytes:
    doc = {"id": "cmpl-0123456789abcdef", "object": "text_completion", "created": 1790000000,
           "model": "bench-model", "choices": [{"index": 0, "text": text, "logprobs": None,
                                                "finish_reason": "length" if final else None,
                                                "stop_reason": None}]}
    if final:
        doc["usage"] = {"prompt_tokens": 32, "completion_tokens": tokens, "total_tokens": 32 + tokens}
    payload = b"data: " + json.dumps(doc, separators=(",", ":")).encode() + b"\n\n"
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


class _Stream(asyncio.Protocol):
    def __init__(self, source: "Source"):
        self.source = source
        self.buf = b""
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buf += data
        head, sep, body = self.buf.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if len(body) < length:
            return
        self.buf = b""
        if self.source.unpaced:
            # the whole response at once: it arrives in one or two reads
            self.transport.write(self.source.whole)
            if not self.source.keepalive or b"connection: close" in head.lower():
                self.transport.close()
            return
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        self.source.active[self] = 0

    def connection_lost(self, exc):
        self.source.active.pop(self, None)


class Source:
    """Every `interval` s, one token chunk to every open stream."""

    def __init__(self, tokens: int, interval: float, keepalive: bool = True):
        self.tokens = tokens
        self.interval = interval
        self.unpaced = interval <= 0
        self.keepalive = keepalive
        self.active: dict[_Stream, int] = {}
        self.token_chunk = _event(" tok")
        self.final = _event("", final=True, tokens=tokens) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
        self.whole = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                      + self.token_chunk * tokens + self.final)

    async def pump(self, slices: int = 1):
        """`slices` > 1 spreads each round over the interval (stream i in slice i % slices), as a
        server whose requests run out of step sends; 1 sends every stream's token at once."""
        next_at = time.perf_counter()
        tick = 0
        while True:
            next_at += self.interval / slices
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
            tick = (tick + 1) % slices
            for stream, sent in list(self.active.items()):
                if slices > 1 and id(stream) // 16 % slices != tick:
                    continue
                if sent < self.tokens:
                    stream.transport.write(self.token_chunk)
                    self.active[stream] = sent + 1
                else:
                    stream.transport.write(self.final)
                    stream.transport.close()
                    self.active.pop(stream, None)


def _chunk(payload: bytes) -> bytes:
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


async def serve(port: int, tokens: int, interval: float, slices: int = 1) -> None:
    source = Source(tokens, interval)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Stream(source), "127.0.0.1", port, backlog=2048)
    print("ready", flush=True)
    async with server:
        if source.unpaced:
            await asyncio.Event().wait()
        await source.pump(slices)


# ---------------------------------------------------------------- the clients


async def vllm_style(url: str, streams: int, requests: int, tokens: int, pooled: bool = False) -> int:
    """What vLLM's serving benchmark does per chunk: line iteration, json.loads, timestamps.

    `pooled`: keep-alive connections reused across requests, as vLLM's current
    benchmark session does; otherwise a new connection per request.
    """
    import aiohttp

    received = 0
    gate = asyncio.Semaphore(streams)
    body = {"prompt": "hi", "max_tokens": tokens, "stream": True, "ignore_eos": True,
            "stream_options": {"include_usage": True}}
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=60) if pooled else \
        aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=6 * 3600)) as session:
        async def one() -> None:
            nonlocal received
            async with gate:
                itl, ttft, generated = [], 0.0, ""
                st = time.perf_counter()
                latest = st
                async with session.post(url, json=body) as resp:
                    async for chunk_bytes in resp.content:
                        chunk_bytes = chunk_bytes.strip()
                        if not chunk_bytes:
                            continue
                        chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
                        if chunk == "[DONE]":
                            continue
                        data = json.loads(chunk)
                        if choices := data.get("choices"):
                            text = choices[0].get("text")
                            now = time.perf_counter()
                            if text:
                                if ttft == 0.0:
                                    ttft = now - st
                                else:
                                    itl.append(now - latest)
                                latest = now
                                generated += text
                                received += 1
                        elif usage := data.get("usage"):
                            usage.get("completion_tokens")
        await asyncio.gather(*(one() for _ in range(requests)))
    return received


async def gpudeck_client(url: str, streams: int, requests: int, tokens: int) -> int:
    from console.bench.client import StreamClient, request_body

    base = url.rsplit("/v1/", 1)[0]
    body = request_body("completions", None, "hi", tokens)
    received = 0
    gaps: list[float] = []
    async with StreamClient(base) as client:
        queue = list(range(requests))

        async def worker() -> None:
            nonlocal received
            while queue:
                record = await client.send(queue.pop(), body)
                received += len(record.chunk_times)
                gaps.extend(record.itls)
        await asyncio.gather(*(worker() for _ in range(streams)))
    if gaps:   # what the client measured: coalescing must not bend it
        MEASURED["itl_median_ms"] = statistics.median(gaps) * 1000
    return received


MEASURED: dict[str, float] = {}


async def httpx_lines(url: str, streams: int, requests: int, tokens: int) -> int:
    """A plain httpx line loop with json.loads, for the record."""
    import httpx

    received = 0
    gate = asyncio.Semaphore(streams)
    body = {"prompt": "hi", "max_tokens": tokens, "stream": True}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=None, limits=limits) as client:
        async def one() -> None:
            nonlocal received
            async with gate:
                async with client.stream("POST", url, json=body) as resp:
                    async for line in resp.aiter_lines():
                        if line.startswith("data: ") and line != "data: [DONE]":
                            data = json.loads(line[6:])
                            if data.get("choices") and data["choices"][0].get("text"):
                                time.perf_counter()
                                received += 1
        await asyncio.gather(*(one() for _ in range(requests)))
    return received


async def vllm_pooled(url: str, streams: int, requests: int, tokens: int) -> int:
    return await vllm_style(url, streams, requests, tokens, pooled=True)


CLIENTS = {"gpudeck": gpudeck_client, "vllm-style": vllm_style, "vllm-pooled": vllm_pooled,
           "httpx-lines": httpx_lines}
# gpudeck on the loop a sweep uses (uvloop when installed); "-asyncio": never uvloop;
# "-base": asyncio running the checkout given with --base (the code before a change)
GPUDECK_VARIANTS = {"gpudeck-asyncio": gpudeck_client, "gpudeck-base": gpudeck_client}
CLIENTS.update(GPUDECK_VARIANTS)


def _runner(name: str):
    """How a client's coroutine is run: the sweep's own loop for gpudeck, asyncio.run for the rest."""
    if name in ("gpudeck", "gpudeck-asyncio"):
        from console.bench.loop import run

        return lambda coro: run(coro, use_uvloop=name == "gpudeck")
    return asyncio.run


def client_main(name: str, url: str, streams: int, requests: int, tokens: int, root: str) -> None:
    sys.path.insert(0, root)
    lag_max = 0.0
    clock = {}

    async def lag_probe():
        nonlocal lag_max
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.1)
            lag_max = max(lag_max, time.perf_counter() - before - 0.1)

    async def main():
        probe = asyncio.create_task(lag_probe())
        if name.startswith("gpudeck") and name != "gpudeck-base":
            from console.bench.loop import clock_info

            clock.update(clock_info())
        t0 = time.perf_counter()
        got = await CLIENTS[name](url, streams, requests, tokens)
        wall = time.perf_counter() - t0
        probe.cancel()
        return got, wall

    # imports happen before the meter starts, so only the streaming is counted
    import aiohttp  # noqa: F401
    import httpx  # noqa: F401
    import console.bench.client  # noqa: F401

    runner = _runner(name)
    before = resource.getrusage(resource.RUSAGE_SELF)
    got, wall = runner(main())
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(json.dumps({"tokens": got, "cpu_s": cpu, "wall_s": wall, "lag_max_ms": lag_max * 1000,
                      "clock": clock, **MEASURED}))


# ---------------------------------------------------------------- the driver


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(name: str, url: str, streams: int, rounds: int, tokens: int, base: str | None) -> dict:
    root = base if name == "gpudeck-base" else str(ROOT)
    out = subprocess.run([sys.executable, __file__, "--client", name, "--url", url, "--streams", str(streams),
                          "--requests", str(streams * rounds), "--tokens", str(tokens), "--root", root],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{name} client failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _per10k(r: dict) -> float:
    return r["cpu_s"] / max(r["tokens"], 1) * 10000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", default="64,256,512")
    parser.add_argument("--tokens", type=int, default=64, help="tokens per request")
    parser.add_argument("--rounds", type=int, default=2, help="requests per stream")
    parser.add_argument("--interval-ms", type=float, default=40.0, help="per-stream token interval")
    parser.add_argument("--clients", default="gpudeck,vllm-style,vllm-pooled")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs of every client")
    parser.add_argument("--base", help="another checkout, measured as the client 'gpudeck-base'")
    parser.add_argument("--spread", type=int, default=1,
                        help="send each round in this many slices across the interval (paced source)")
    parser.add_argument("--client")
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--port", type=int)
    parser.add_argument("--url")
    parser.add_argument("--requests", type=int)
    parser.add_argument("--root", default=str(ROOT))
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.port, args.tokens, args.interval_ms / 1000, args.spread))
        return
    if args.client:
        client_main(args.client, args.url, int(args.streams), args.requests, args.tokens, args.root)
        return
    names = args.clients.split(",")
    if args.base and "gpudeck-base" not in names:
        names.append("gpudeck-base")
    port = _free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--port", str(port), "--tokens",
                               str(args.tokens), "--interval-ms", str(args.interval_ms), "--spread", str(args.spread)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        url = f"http://127.0.0.1:{port}/v1/completions"
        print(f"source: {args.tokens} tokens/request, one token per stream every {args.interval_ms:g} ms; "
              f"{args.rounds} requests per stream; cores: {os.cpu_count()}; {args.repeats} alternated repeats")
        print(f"{'streams':>7} {'rep':>3} {'client':<16} {'tokens':>8} {'offered/s':>10} {'got/s':>8} "
              f"{'cpu s/10k tok':>14} {'lag max ms':>11} {'load1':>6} {'ITL p50':>8}  ratio vs vllm-style")
        for streams in (int(s) for s in args.streams.split(",")):
            offered = streams * 1000 / args.interval_ms if args.interval_ms > 0 else float("inf")
            ratios: dict[str, list[float]] = {}
            clocks: dict[str, dict] = {}
            for rep, order in alternate(names, args.repeats):
                results = {}
                for name in order:
                    results[name] = measure(name, url, streams, args.rounds, args.tokens, args.base)
                    results[name]["load1"] = os.getloadavg()[0]
                base = results.get("vllm-style")
                for name in names:
                    r = results[name]
                    ratio = ""
                    if base and name != "vllm-style":
                        value = _per10k(r) / _per10k(base)
                        ratios.setdefault(name, []).append(value)
                        ratio = f"{value:.2f}"
                    if r.get("clock"):
                        clocks[name] = r["clock"]
                    print(f"{streams:>7} {rep + 1:>3} {name:<16} {r['tokens']:>8} {offered:>10.0f} "
                          f"{r['tokens'] / r['wall_s']:>8.0f} {_per10k(r):>14.3f} {r['lag_max_ms']:>11.1f} "
                          f"{r['load1']:>6.1f} {_fmt_ms(r.get('itl_median_ms')):>8}  {ratio}", flush=True)
            for name, values in ratios.items():
                print(f"{streams:>7} {name:<16} ratio vs vllm-style: median {statistics.median(values):.2f} "
                      f"(min {min(values):.2f}, max {max(values):.2f}, n={len(values)})"
                      + (f"; clock {clocks[name]}" if name in clocks else ""), flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
