"""The load generator never hangs and never loses a run (issue 11, items 4, 5 and 8).

A small misbehaving server (its own thread) plays what real ones do: one that
goes silent mid-stream with its sockets open (llama.cpp after SIGTERM), one
that trickles bytes for ever, one that closes its side and waits.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from console.bench.client import StreamClient, request_body
from console.bench.results import RunStore

ROOT = Path(__file__).resolve().parent.parent
MODELS = json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}).encode()
CHUNK = b'data: {"choices":[{"index":0,"text":" tok"}]}\n\n'


def _chunked(payload: bytes) -> bytes:
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


class FakeServer:
    """An HTTP server whose completions misbehave as `mode` says.

    silent:     headers and one content chunk, then nothing, socket kept open
    trickle:    a content chunk every 0.2 s, for ever
    half-close: headers, then the server shuts its sending side and waits
    whole:      a whole short response at once, connection kept alive (or, with
                `drop_reused`, dropped when a second request comes on it)
    echo-401:   401 with the request's Authorization header echoed in the body
    echo-sse:   200, then an SSE error event echoing the Authorization header
    done-open:  two content chunks and [DONE], then nothing more (no last chunk), socket kept open
    abort:      two content chunks, then the last event vLLM and sglang send for a request
                they give up (shutting down): finish_reason "abort", usage, [DONE]
    Any mode with `models_trickle` makes /v1/models send its head and then
    one byte every 0.2 s, for ever. `second_late` holds the second completion's
    first chunk that many seconds (the client opened it later, on a busy
    machine); `chunks_sent` is when each first chunk went (time.monotonic).
    """

    def __init__(self, mode: str, models_trickle: bool = False, drop_reused: bool = False,
                 second_late: float = 0.0):
        self.mode = mode
        self.second_late = second_late
        self.chunks_sent: list[float] = []
        self.drop_reused = drop_reused
        self.connections = 0
        self.dropped = 0
        self.models_trickle = models_trickle
        self.loop = asyncio.new_event_loop()
        self.requests: list[tuple[str, dict]] = []
        self.got_request = threading.Event()
        self.models_asked = threading.Event()
        self.client_closed = threading.Event()
        self.writers: list[asyncio.StreamWriter] = []
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._sock = sock
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main():
            self.server = await asyncio.start_server(self._handle, sock=self._sock)
            self._ready.set()
            await self.server.serve_forever()

        try:
            self.loop.run_until_complete(main())
        except (asyncio.CancelledError, RuntimeError):
            pass

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        self.connections += 1
        served = 0
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if self.mode == "whole" and served and self.drop_reused:
                self.dropped += 1
                writer.transport.abort()  # a kept-alive connection this server no longer serves
                return
            served += 1
            if not await self._one(head, reader, writer):
                return

    async def _one(self, head: bytes, reader, writer) -> bool:
        lines = head.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        length = int(headers.get("content-length", 0))
        if length:
            await reader.readexactly(length)
        self.requests.append((path, headers))
        if self.mode in ("echo-401", "echo-sse") and path.startswith("/v1/") and path != "/v1/models":
            echoed = f"invalid API key: got authorization: {headers.get('authorization')}"
            if self.mode == "echo-401":
                body = json.dumps({"error": {"message": echoed, "code": 401}}).encode()
                writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
            else:
                event = b"data: " + json.dumps({"error": {"message": echoed}}).encode() + b"\n\n"
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked"
                             b"\r\n\r\n" + _chunked(event) + _chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            await writer.drain()
            return True
        if self.mode == "abort" and path.startswith("/v1/") and path != "/v1/models":
            last = (b'data: {"choices":[{"index":0,"text":"","finish_reason":"abort"}],'
                    b'"usage":{"prompt_tokens":8,"completion_tokens":2,"total_tokens":10}}\n\n')
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + _chunked(CHUNK) * 2 + _chunked(last) + _chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            await writer.drain()
            return True
        if self.mode == "done-open" and path.startswith("/v1/") and path != "/v1/models":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + _chunked(CHUNK) * 2 + _chunked(b"data: [DONE]\n\n"))
            await writer.drain()
            await asyncio.Event().wait()
        if self.mode == "whole" and path.startswith("/v1/") and path != "/v1/models":
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + _chunked(CHUNK) * 3 + _chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            await writer.drain()
            return True
        if path == "/v1/models":
            self.models_asked.set()
            if self.models_trickle:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
                while True:
                    writer.write(b" ")
                    await asyncio.sleep(0.2)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(MODELS)).encode() + b"\r\nConnection: close\r\n\r\n" + MODELS)
            await writer.drain()
            writer.close()
            return False
        if not path.startswith("/v1/"):
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            writer.close()
            return False
        self.got_request.set()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        if self.mode == "half-close":
            await writer.drain()
            writer.write_eof()
            if await reader.read(1) == b"":
                self.client_closed.set()
            return False
        if self.second_late and len([p for p, _ in self.requests if p == path]) == 2:
            await asyncio.sleep(self.second_late)
        writer.write(_chunked(CHUNK))
        await writer.drain()
        self.chunks_sent.append(time.monotonic())
        if self.mode == "trickle":
            while True:
                await asyncio.sleep(0.2)
                writer.write(_chunked(CHUNK))
        await asyncio.Event().wait()  # silent: hold the socket open, send nothing

    def close(self) -> None:
        def stop():
            for w in self.writers:
                w.transport.abort()
            self.server.close()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()

        self.loop.call_soon_threadsafe(stop)
        self.thread.join(10)


@pytest.fixture
def fake(request):
    servers = []

    def make(mode: str, **kw) -> FakeServer:
        server = FakeServer(mode, **kw)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def bench(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console.bench", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=kw.pop("timeout", 120), env=kw.pop("env", os.environ.copy()))


def test_silent_streams_on_a_server_that_closed_its_listener_end_as_server_stopping(fake):
    """An HTTP server shutting down (uvicorn waits for its clients after closing the listening
    socket) holds the streams open and sends nothing: that is a stop in progress, not a hang."""
    server = fake("silent")
    proc = subprocess.Popen([sys.executable, "-m", "console.bench", "--url", server.url, "--concurrency", "2,4",
                             "--num-prompts", "8", "--warmup", "0", "--input-len", "8", "--output-len", "16",
                             "--stall-timeout", "2", "--json"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.got_request.wait(60)
    server.loop.call_soon_threadsafe(server.server.close)  # no new connections; open ones stay
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    first, second = json.loads(out)["levels"]
    assert first["status"] == "failed" and "server_hung" not in first, first
    assert first["server_stopping"]["message"].startswith("server stopping: it refuses new connections"), first
    assert second["status"] == "skipped" and second["skipped_because"] == "server stopping"


def test_streams_stalling_together_end_the_level_as_server_hung(fake):
    server = fake("silent")
    out = bench("--url", server.url, "--concurrency", "2,4", "--num-prompts", "8", "--warmup", "0",
                "--input-len", "8", "--output-len", "16", "--stall-timeout", "1", "--json")
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr
    first, second = json.loads(out.stdout)["levels"]
    assert first["status"] == "failed"
    # the streams in flight (two, or one when the second had not connected yet on a busy
    # machine) ended together; the others were never sent
    in_flight = first["failed"]
    assert in_flight in (1, 2), first
    assert first["server_hung"]["message"].startswith(f"server hung: no bytes on any of {in_flight} streams for 1 s")
    assert first["server_hung"]["check"] == "/v1/models answers HTTP 200"
    assert first["not_sent"] == 8 - in_flight
    assert second["status"] == "skipped" and second["skipped_because"] == "level 2 failed"
    completions = [p for p, _ in server.requests if p == "/v1/completions"]
    assert len(completions) == in_flight


async def test_client_closes_a_connection_the_server_closed(fake):
    server = fake("half-close")
    async with StreamClient(server.url) as client:
        record = await client.send(0, request_body("completions", None, "hi", 4))
    assert record.error == "stream cut off mid-response"
    # the server sees our FIN: nothing stays in CLOSE-WAIT on our side
    assert await asyncio.to_thread(server.client_closed.wait, 30)


async def test_a_request_the_server_aborted_is_its_error_not_a_success(fake):
    """A stream that ends in order but with finish_reason "abort" (vLLM aborting its in-flight
    requests after a SIGTERM) is the server's error: never counted ok, never its tokens' ITL."""
    server = fake("abort")
    async with StreamClient(server.url) as client:
        record = await client.send(0, request_body("completions", None, "hi", 900))
    assert not record.ok
    assert record.error == 'server error: the server aborted the request (finish_reason "abort")'
    assert len(record.chunk_times) == 2


async def test_every_request_has_an_overall_deadline(fake):
    server = fake("trickle")  # bytes keep coming, so only the overall deadline can end it
    async with StreamClient(server.url, timeout_s=1.5, stall_s=60) as client:
        record = await client.send(0, request_body("completions", None, "hi", 1000))
    assert record.error == "timed out after 1.5 s"
    assert len(record.chunk_times) >= 1


def test_sigterm_during_a_trickling_models_request_stops_at_once(fake, gpudeck_home):
    server = fake("silent", models_trickle=True)
    proc = subprocess.Popen([sys.executable, "-m", "console.bench", "--url", server.url, "--concurrency", "1",
                             "--events"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ.copy())
    try:
        assert server.models_asked.wait(60), "the bench never asked /v1/models"
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4
    assert err.strip() == "gpudeck bench: not started: stopped by the operator before level 1"
    assert json.loads(out.splitlines()[-1]) == {"event": "run-end", "status": "not started", "exit_code": 4,
                                                "path": None}


def test_sigint_mid_level_marks_it_stopped_and_saves(fake, gpudeck_home):
    server = fake("silent")
    proc = subprocess.Popen([sys.executable, "-m", "console.bench", "--url", server.url, "--concurrency", "2",
                             "--num-prompts", "6", "--warmup", "0", "--input-len", "4", "--events"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ.copy())
    try:
        assert server.got_request.wait(60)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3 and "Traceback" not in err
    events = [json.loads(line) for line in out.splitlines()]
    level = next(e["summary"] for e in events if e["event"] == "level-end")
    assert level["stopped"] is True and level["failed"] == 2 and level["not_sent"] == 4
    saved = json.loads(Path(events[-1]["path"]).read_text())
    assert saved["levels"][0]["stopped"] is True


def test_headers_and_api_key_reach_the_server_but_not_the_saved_run(fake, gpudeck_home):
    server = fake("silent")
    env = os.environ.copy()
    env["BENCH_TEST_KEY"] = "sk-secret-123"
    out = bench("--url", server.url, "--concurrency", "1", "--num-prompts", "1", "--warmup", "0",
                "--input-len", "4", "--stall-timeout", "1", "--header", "X-Team: infra",
                "--api-key-env", "BENCH_TEST_KEY", "--json", env=env)
    assert out.returncode == 3, out.stderr
    sent = [h for p, h in server.requests if p == "/v1/completions"][0]
    assert sent["authorization"] == "Bearer sk-secret-123" and sent["x-team"] == "infra"
    models = [h for p, h in server.requests if p == "/v1/models"][0]
    assert models["authorization"] == "Bearer sk-secret-123"
    doc = json.loads(out.stdout)
    saved = Path(doc["path"]).read_text()
    assert "sk-secret-123" not in saved and "infra" not in saved
    assert doc["config"]["headers"] == ["Authorization", "X-Team"]
    assert doc["config"]["api_key_env"] == "BENCH_TEST_KEY"


def test_run_ids_are_unique_across_processes(gpudeck_home):
    code = ("import sys; from console.bench.results import RunStore; "
            "s = RunStore('local', 'sweep-same'); print(s.run_id)")
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env=os.environ.copy()) for _ in range(6)]
    ids = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert len(set(ids)) == 6
    runs = gpudeck_home / "data" / "profiles" / "local" / "runs"
    assert {p.name for p in runs.iterdir()} == {f"{i}.json" for i in ids} | {f"{i}.requests.jsonl" for i in ids}


def test_a_stray_requests_file_is_never_appended_to():
    stray = RunStore("local", "sweep-y")
    stray.path.unlink()  # a run file lost, its requests file left behind
    store = RunStore("local", "sweep-y")
    assert store.run_id == "sweep-y-2"
    assert store.requests_path != stray.requests_path


async def test_connections_are_reused(fake):
    server = fake("whole")
    async with StreamClient(server.url) as client:
        records = [await client.send(i, request_body("completions", None, "hi", 3)) for i in range(10)]
    assert all(r.ok and len(r.chunk_times) == 3 for r in records)
    assert server.connections == 1


async def test_a_stale_kept_alive_connection_never_fails_a_request(fake):
    server = fake("whole", drop_reused=True)
    async with StreamClient(server.url) as client:
        records = [await client.send(i, request_body("completions", None, "hi", 3)) for i in range(6)]
    assert [r.error for r in records] == [None] * 6
    # requests 2..6 each went out on the kept-alive connection, were dropped, and went again on a new one
    assert server.dropped == 5 and server.connections == 6


# ---- issue 23: caps, a stop at any size, secrets, headers, a full disk ------------------------------

@pytest.mark.parametrize("argv, named", [
    (["--concurrency", "100000000000"], "--concurrency 100,000,000,000 is above gpudeck's limit of 10,000"),
    (["--concurrency", "1", "--input-len", "100000000000"], "--input-len 100,000,000,000 is above"),
    (["--concurrency", "1", "--output-len", "100000000000"], "--output-len 100,000,000,000 is above"),
    (["--concurrency", "1", "--num-prompts", "100000000000"], "--num-prompts 100,000,000,000 is above"),
    (["--concurrency", "10000", "--prompts-per-stream", "1000"], "10,000,000 requests in one level is above"),
    (["--concurrency", ",".join(map(str, range(1, 100)))], "99 levels in one sweep is above"),
    (["--request-rate", "1e11"], "--request-rate 100,000,000,000 is above"),
    (["--request-rate", "1", "--max-concurrency", "100000000000"], "--max-concurrency 100,000,000,000 is above"),
    (["--concurrency", "1", "--warmup", "100000000"], "--warmup 100,000,000 is above"),
    (["--concurrency", "1", "--timeout", "1e300"], "--timeout 1e+300 is above"),
    (["--concurrency", "8000", "--input-len", "1000000"], "prompt tokens per level"),
])
def test_loads_beyond_sane_maxima_are_refused_with_one_line(argv, named, capsys):
    from console.cli import main

    code = main(["bench", "--url", "http://127.0.0.1:9", *argv])
    err = capsys.readouterr().err
    assert code == 2 and named in err and err.count("\n") == 1, err


def test_sigterm_while_the_largest_prompts_are_built_ends_the_bench(fake, gpudeck_home):
    """The largest level the caps allow (1M-token prompts, as many as fit the per-level cap) takes
    long to build; one SIGTERM in the middle ends the bench by itself, the run saved as stopped."""
    from console.bench.limits import MAX_INPUT_LEN, MAX_PROMPT_TOKENS

    server = fake("silent")
    prompts = MAX_PROMPT_TOKENS // MAX_INPUT_LEN - 1          # with the warm-up: at the cap
    proc = subprocess.Popen([sys.executable, "-m", "console.bench", "--url", server.url, "--concurrency", "1",
                             "--num-prompts", str(prompts), "--input-len", str(MAX_INPUT_LEN), "--events"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ.copy())
    try:
        first = json.loads(proc.stdout.readline() or "{}")
        assert first.get("event") == "run-start", proc.stderr.read()
        proc.send_signal(signal.SIGTERM)   # the level's prompts are being built now
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, err     # ended by itself: a second signal would exit 143
    assert "Traceback" not in err
    events = [json.loads(line) for line in out.splitlines()]
    level = next(e["summary"] for e in events if e["event"] == "level-end")
    assert level["stopped"] is True and level["not_sent"] == prompts
    assert not [p for p, _ in server.requests if p == "/v1/completions"]


@pytest.mark.parametrize("mode", ["echo-401", "echo-sse"])
@pytest.mark.slow
def test_an_api_key_echoed_by_the_server_is_never_printed_or_saved(fake, gpudeck_home, tmp_path, mode):
    server = fake(mode)
    key = "sk-live-0123456789abcdefSECRET"
    env = dict(os.environ, BENCH_TEST_KEY=key)
    out_file = tmp_path / "out.json"
    runs = []
    for fmt in ("--json", "--events", None):
        argv = ["--url", server.url, "--concurrency", "1", "--num-prompts", "2", "--warmup", "0",
                "--input-len", "4", "--api-key-env", "BENCH_TEST_KEY", "--out", str(out_file)]
        out = bench(*argv, *([fmt] if fmt else []), env=env)
        assert out.returncode == 3, out.stderr
        shown = out.stdout + out.stderr
        assert key not in shown and key[:12] not in shown and "[redacted]" in shown
        saved = out_file.read_text()
        assert key not in saved and "got authorization: [redacted]" in saved
        runs.append(out)
    sent = [h for p, h in server.requests if p == "/v1/completions"]
    assert sent and all(h["authorization"] == f"Bearer {key}" for h in sent)   # the key did go to the server
    folder = gpudeck_home / "data" / "profiles" / "local" / "runs"
    files = sorted(folder.iterdir())
    assert len(files) == 9   # each of the 3 runs: its document, its requests and its timeline, all read below
    for path in files:
        text = path.read_text()
        assert key not in text and key[:12] not in text, path
    assert any("[redacted]" in p.read_text() for p in files if p.name.endswith(".requests.jsonl"))


def test_a_key_cut_off_by_a_length_cap_is_masked_too():
    from console.bench.redact import Redactor

    redactor = Redactor({"Authorization": "Bearer sk-abcdefghijklmnop"})
    assert redactor.text("echo: Bearer sk-abcdefghijklmnop!") == "echo: [redacted]!"
    assert redactor.text("key sk-abcdefghijklmnop") == "key [redacted]"
    assert redactor.text("cut off at sk-abcdefgh") == "cut off at [redacted]"
    assert redactor.text("any Bearer other-token-value") == "any Bearer [redacted]"
    custom = Redactor({"X-Team": "infra", "X-Session-Token": "s3ss10n-value"})
    assert custom.text("team infra, session s3ss10n-value") == "team infra, session [redacted]"


@pytest.mark.parametrize("header", ["Host: x", "host:evil", "Transfer-Encoding: chunked", "Content-Length: 5",
                                    "Connection: close", "Keep-Alive: 5", "TE: trailers", "Upgrade: h2c",
                                    "Trailer: x", "Expect: 100-continue", "Proxy-Connection: keep-alive"])
def test_host_framing_and_hop_by_hop_headers_are_refused(header, capsys):
    from console.cli import main

    code = main(["bench", "--url", "http://127.0.0.1:9", "--concurrency", "1", "--header", header])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"--header {header.split(':')[0]}" in err, err


@pytest.mark.parametrize("body", ['{"a": NaN}', '{"a": Infinity}', '{"a": [-Infinity]}', '{"a": 1e999}'])
def test_extra_body_with_a_non_finite_number_is_refused(body, capsys):
    from console.cli import main

    code = main(["bench", "--url", "http://127.0.0.1:9", "--concurrency", "1", "--extra-body", body])
    err = capsys.readouterr().err
    assert code == 2 and "is not a finite number" in err and err.count("\n") == 1, err


def _no_file_writes() -> None:
    """In the child: every write to a regular file fails (EFBIG), as on a full disk; pipes still work."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_a_full_disk_leaves_no_empty_run_files(fake, gpudeck_home):
    server = fake("whole")
    proc = subprocess.run([sys.executable, "-m", "console.bench", "--url", server.url, "--concurrency", "1",
                           "--num-prompts", "1", "--warmup", "0", "--input-len", "4"], cwd=ROOT,
                          capture_output=True, text=True, env=os.environ.copy(), timeout=120,
                          preexec_fn=_no_file_writes)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "cannot save the run: File too large (nothing was saved)" in proc.stderr
    assert "Traceback" not in proc.stderr
    folder = gpudeck_home / "data" / "profiles" / "local" / "runs"
    left = [p.name for p in folder.iterdir()] if folder.exists() else []
    assert left == [], left


_PEAK_RSS = ("import resource, sys\n"
             "from console.bench.workload import load_dataset\n"
             "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
             "items = load_dataset(sys.argv[1], 'sharegpt') if sys.argv[1] != '-' else []\n"
             "print(len(items), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n")


def test_a_large_sharegpt_file_is_read_as_a_stream(tmp_path):
    """What the bench keeps of a conversation is its first two turns: reading the file may not cost
    its whole size again (json.loads of the file held the text and every object in it)."""
    path = tmp_path / "sharegpt.json"
    conversations = 4000
    with open(path, "w") as fh:
        fh.write("[")
        for i in range(conversations):
            turns = [{"from": "human", "value": f"question {i}"}, {"from": "gpt", "value": f"answer {i}"},
                     {"from": "human", "value": "long follow-up " * 1200}]
            fh.write(("," if i else "") + json.dumps({"id": str(i), "conversations": turns}))
        fh.write("]")
    size_kib = path.stat().st_size / 1024
    out = subprocess.run([sys.executable, "-c", _PEAK_RSS, str(path)], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, check=True)
    kept, grew_kib = map(int, out.stdout.split())
    print(f"\nShareGPT {size_kib / 1024:.0f} MiB: peak RSS grew {grew_kib / 1024:.1f} MiB while reading it")
    assert kept == conversations
    assert grew_kib < size_kib / 4, f"reading {size_kib:.0f} KiB grew the peak RSS by {grew_kib} KiB"


def test_a_sharegpt_file_that_is_not_a_list_is_one_line(tmp_path):
    from console.bench.workload import load_dataset

    for text, why in (("[" * 100_000, "not JSON"), ('[{"conversations": []} {"a": 1}]', "expected ','"),
                      ('[{"conversations": [', "not JSON"), ('{"a": 1}', "a JSON list of conversations")):
        path = tmp_path / "bad.json"
        path.write_text(text)
        with pytest.raises(ValueError) as info:
            load_dataset(path, "sharegpt")
        assert why in str(info.value) and "\n" not in str(info.value), (text[:40], str(info.value))


class _Stream:
    """What the client's watchdog reads of a stream: when its last byte came, whether any did."""

    def __init__(self, last_bytes: float, answered: bool = False) -> None:
        self.last_bytes, self.answered, self.ended = last_bytes, answered, None

    def abort(self, message: str) -> None:
        self.ended = message


def test_silent_streams_opened_apart_are_judged_together_as_a_hang():
    """Two streams to a silent server, the second opened 0.6 s after the first (a busy client):
    at the first look only the older one is past the stall limit. Ending it alone would send a
    fresh silent request in its place, over and over, and the hang would never be seen."""
    client = StreamClient("http://127.0.0.1:9", stall_s=1.0, keep_alive=False)
    older, younger = _Stream(0.0), _Stream(0.6)
    client._open = {older: 0.0, younger: 0.6}
    client.check(1.05)
    assert (older.ended, younger.ended, client.hung) == (None, None, None)
    client.check(2.05)
    assert older.ended == younger.ended == "server hung"
    assert client.hung == "server hung: no bytes on any of 2 streams for 1 s"


def test_a_stream_stalls_alone_while_another_is_answering():
    client = StreamClient("http://127.0.0.1:9", stall_s=1.0, keep_alive=False)
    stalled, talking = _Stream(0.0, answered=True), _Stream(1.0, answered=True)
    client._open = {stalled: 0.0, talking: 0.0}
    client.check(1.05)
    assert stalled.ended == "stalled: no bytes for 1 s" and talking.ended is None and client.hung is None


def test_streams_answered_apart_are_not_ended_one_by_one_while_both_fall_silent():
    """A hung server that sent each stream a token, the second 0.6 s after the first (a busy
    client opened it later): at the look where only the older one is past the stall limit, the
    younger one's token is no proof that the server still answers; both are judged at the next look."""
    client = StreamClient("http://127.0.0.1:9", stall_s=5.0, keep_alive=False)
    older, younger = _Stream(0.0, answered=True), _Stream(0.6, answered=True)
    client._open = {older: 0.0, younger: 0.0}
    for look in (1.3, 2.3, 3.3, 4.3, 5.3):
        client.check(look)
    assert (older.ended, younger.ended, client.hung) == (None, None, None)
    client.check(6.3)
    assert older.ended == younger.ended == "server hung"


def test_a_stalled_stream_ends_alone_when_another_request_finished_since_the_last_look():
    client = StreamClient("http://127.0.0.1:9", stall_s=5.0, keep_alive=False)
    stalled, queued = _Stream(0.0, answered=True), _Stream(5.4)
    client._open = {stalled: 0.0, queued: 5.4}
    client.check(5.0)
    client._heard = 5.5          # a request answered in full between the two looks
    client.check(6.0)
    assert stalled.ended == "stalled: no bytes for 5 s" and queued.ended is None and client.hung is None


@pytest.fixture
def busy_cpus():
    """Every core busy with a spinning process (and one more), as on a shared build machine."""
    spin = "while True: pass"
    burners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range((os.cpu_count() or 2) + 1)]
    yield
    for proc in burners:
        proc.kill()
    for proc in burners:
        proc.wait(10)


def test_a_level_against_a_hung_server_ends_within_the_stall_limit_on_a_busy_machine(fake, busy_cpus):
    """Headers and one token on each stream, then nothing, the second stream's token 1 s after
    the first's: the level ends within the stall limit plus one watchdog look (2 s allowed) of the
    server's last byte, however busy the machine. It took 22 s and 42 s when the older stream was
    ended alone as stalled and a fresh silent request took its place, pair after pair."""
    server = fake("silent", second_late=1.0)
    proc = subprocess.Popen([sys.executable, "-m", "console.bench", "--url", server.url, "--concurrency", "2",
                             "--num-prompts", "16", "--warmup", "0", "--input-len", "8", "--output-len", "16",
                             "--stall-timeout", "5", "--events"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ended = None
    try:
        for line in proc.stdout:
            if json.loads(line)["event"] == "level-end":
                ended = time.monotonic()
                break
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 3 and ended is not None
    assert len(server.chunks_sent) == 2, "a stream was replaced by a fresh request"
    assert ended - server.chunks_sent[1] <= 5 + 2, ended - server.chunks_sent[1]


async def test_done_ends_a_request_whose_server_holds_the_stream_open(fake):
    """[DONE] is the end of the answer: a server that sends it and never closes the stream
    (no last chunk) must not hold the request until its stall or its deadline."""
    server = fake("done-open")
    async with StreamClient(server.url, timeout_s=60, stall_s=60) as client:
        record = await asyncio.wait_for(client.send(0, request_body("completions", None, "hi", 2)), 20)
    assert record.ok and record.error is None and len(record.chunk_times) == 2


def test_a_level_against_a_server_that_holds_the_stream_open_after_done_is_ok(fake):
    """With --timeout 20 every request was 'timed out' and the level failed, though each answer was whole."""
    server = fake("done-open")
    out = bench("--url", server.url, "--concurrency", "2", "--num-prompts", "4", "--warmup", "0",
                "--input-len", "8", "--output-len", "2", "--timeout", "20", "--json")
    assert out.returncode == 0, out.stderr
    level = json.loads(out.stdout)["levels"][0]
    assert level["status"] == "ok" and level["completed"] == 4, level


def test_a_large_dataset_of_tiny_prompts_costs_its_level_not_its_size(fake, tmp_path, gpudeck_home):
    """150 MB of one-line prompts cost 1.2 GB before the first request, every line held as an
    object (and the file read whole twice); a level now keeps its own prompts only.

    The peak is the bench process's own (its VmHWM, read by itself as it ends): a child's
    ru_maxrss also counts the test process it was forked from, which in a whole suite run is
    larger than the bound."""
    path = tmp_path / "tiny.jsonl"
    with open(path, "w") as fh:
        fh.writelines(f'{{"prompt": "hi {i}"}}\n' for i in range(1_000_000))
    server = fake("whole")
    peak = tmp_path / "peak"
    own_peak = ("import runpy, sys\n"
                "peak = sys.argv.pop(1)\n"
                "try:\n    runpy.run_module('console.bench', run_name='__main__')\n"
                "finally:\n    open(peak, 'w').write(next(line for line in open('/proc/self/status')"
                " if line.startswith('VmHWM:')))\n")
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        proc = subprocess.run([sys.executable, "-c", own_peak, str(peak), "--url", server.url, "--dataset", str(path),
                               "--dataset-format", "jsonl", "--concurrency", "1", "--num-prompts", "4",
                               "--warmup", "0", "--output-len", "3", "--json"],
                              cwd=ROOT, stdout=out, stderr=err, env=os.environ.copy(), timeout=120)
    assert proc.returncode == 0, (tmp_path / "err").read_text()
    level = json.loads((tmp_path / "out").read_text())["levels"][0]
    assert level["status"] == "ok" and level["completed"] == 4
    peak_mb = int(peak.read_text().split()[1]) / 1024   # "VmHWM:   56789 kB"
    assert peak_mb < 100, f"peak RSS {peak_mb:.0f} MB"


def test_text_after_a_sharegpt_list_is_refused(tmp_path):
    """A ShareGPT file is one JSON list: whatever follows its closing ] (a second list, a
    half-written one, junk) made the file no dataset, but the reader stopped at the ] and took it."""
    from console.bench.workload import load_dataset

    good = '[{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}]'
    for tail in ("]", ',[{"conversations": [', " x"):
        path = tmp_path / "tail.json"
        path.write_text(good + tail)
        with pytest.raises(ValueError, match=r"not JSON: text after the list's closing \] \(ShareGPT format is one"):
            load_dataset(path, "sharegpt")
    path.write_text(good + " \n")
    assert len(load_dataset(path, "sharegpt")) == 1
