"""The simulated sglang server: startup, the OpenAI-compatible API, faults, shutdown.

Lifecycle, as sglang's: log server_args, load weights (memory grows), size
the KV cache, open the port, warm up, "fired up and ready to roll", then
serve. A runtime fault fires when the running batch reaches the configured
concurrency; the process then writes its traceback, leaves the crash picture
in the state file, resets every open connection and exits.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import socket
import struct
import time
import uuid
from typing import Any

from aiohttp import web

from . import faults
from .config import SimConfig, read_json
from .engine import Engine, Request
from .hardware import find_gpu
from .memory import MemoryPlan, kv_bytes_per_token, plan
from .metrics import CONTENT_TYPE, SimMetrics
from .roofline_timer import ModelTiming, build_timing
from .sglang_log import READY_LINE, LogWriter, StartupScript
from .state import IDLE_MIB, gpu_rows, write_state
from .tokens import Vocab, Writer, chat_prompt_tokens, prompt_tokens

OWNED_BY = "sglang (SIMULATED by gpudeck)"
CONTEXT_LEN = 202752


class SimServer:
    def __init__(self, cfg: SimConfig):
        cfg.validate()
        cfg.resolve_files()
        self.cfg = cfg
        self.config_doc = read_json(cfg.model_config)
        self.timing: ModelTiming = build_timing(cfg, self.config_doc)
        self.gpu_model = find_gpu(cfg.gpu)
        kv_token = kv_bytes_per_token(self.config_doc, cfg.tp, self.timing.kv_dtype_bytes)
        self.mem: MemoryPlan = plan(self.gpu_model.memory_mib, cfg.mem_fraction,
                                    self.timing.weights_bytes_per_gpu, kv_token)
        self.log = LogWriter.open(cfg.log)
        self.metrics = SimMetrics(cfg.model, self.mem.kv_tokens, cfg.max_running_requests)
        self.vocab = Vocab()
        self.rng = random.Random(cfg.seed)
        self.status = "starting"
        self.crash_kind: str | None = None
        self.load_fraction = 0.0       # 0..1 of the weights loaded, for memory while loading
        self.engine = Engine(self.timing.timer, self.metrics, self.log, cfg.max_running_requests,
                             self.mem.kv_tokens, fault_at=cfg.fault_trigger(), on_fault=self._fault,
                             prefill_s=self.timing.prefill_s, graph_max_bs=cfg.cuda_graph_max_bs,
                             eager_step_s=cfg.eager_step_ms / 1000.0, jitter=self._jitter())
        self.transports: set[asyncio.BaseTransport] = set()
        self.stop_event = asyncio.Event()
        self.exit_code = 0
        self.hung = asyncio.Event()   # never set: what a hung server waits on
        self.created = int(time.time())

    def _jitter(self):
        """Step-time noise: one factor for this launch (its clocks, its placement), one per step.
        Drawn from the system's entropy, not the seed: two launches of one config must not agree exactly."""
        noise = self.cfg.noise
        if noise <= 0:
            return None
        rng = random.Random()
        launch = min(1.5, max(0.5, rng.gauss(1.0, noise)))
        return lambda: launch * min(1.5, max(0.5, rng.gauss(1.0, noise)))

    # ------------------------------------------------------------------ state file
    def gpu_doc(self) -> list[dict[str, Any]]:
        rows = gpu_rows(self.gpu_model, self.cfg.count)
        tp = self.cfg.tp
        for row in rows[:tp]:
            i = row["index"]
            if self.status == "loading":
                row["memory_used_mib"] = int(620 + self.load_fraction * self.mem.weights_mib)
                row["utilization_gpu"] = 0 if self.load_fraction < 0.05 else 3
            elif self.status in ("ready", "hung"):
                row["memory_used_mib"] = self.mem.used_mib
                batch = len(self.engine.running)
                if self.status == "hung":
                    row["utilization_gpu"], row["utilization_memory"] = 100, 0
                elif batch:
                    row["utilization_gpu"] = min(100, 86 + batch // 4 + self.rng.randint(0, 6))
                    row["utilization_memory"] = min(95, 14 + int(40 * min(1.0, batch / 64)) + self.rng.randint(0, 4))
            elif self.status == "crashed":
                row["memory_used_mib"] = 0
                runtime_crash = self.crash_kind in ("illegal-address", "nccl")
                row["utilization_gpu"] = 100 if runtime_crash and i < tp - 1 else 0
            elif self.status == "stopped":
                row["memory_used_mib"] = IDLE_MIB
        return rows

    def process_doc(self, gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.status not in ("loading", "ready", "hung"):
            return []
        return [{"pid": os.getpid(), "gpu_index": g["index"], "gpu_uuid": g["uuid"],
                 "used_memory_mib": max(0, g["memory_used_mib"] - 6),
                 "process_name": f"sglang::scheduler_TP{g['index']}"} for g in gpus[:self.cfg.tp]]

    def write_state(self) -> None:
        if self.cfg.state_dir is None:
            return
        gpus = self.gpu_doc()
        try:
            write_state(self.cfg.state_dir, {
                "pid": os.getpid(), "port": self.cfg.port, "model": self.cfg.model,
                "status": self.status, "crash_kind": self.crash_kind,
                "running": len(self.engine.running), "queued": len(self.engine.waiting),
                "gpus": gpus, "processes": self.process_doc(gpus)})
        except OSError:
            pass

    async def state_loop(self) -> None:
        while True:
            self.write_state()
            await asyncio.sleep(1.0)

    # ------------------------------------------------------------------ lifecycle
    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal, sig)
        script = StartupScript(self.cfg, self.mem, self.timing.arch, self.timing.quantization,
                               self.timing.timer.source, self.timing.ideal_single_tok_s)
        script.banner(self.log)
        self.write_state()
        state_task = asyncio.create_task(self.state_loop())
        try:
            await self._startup(script)
            if self.status == "crashed":
                return self.exit_code
            runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
            await runner.setup()
            try:
                # SO_REUSEADDR as uvicorn sets it: a relaunch right after a stop binds despite
                # TIME_WAIT, while a port another server listens on is still refused
                await web.TCPSite(runner, self.cfg.host, self.cfg.port, reuse_address=True).start()
            except OSError as exc:
                self.log.line(f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
                              f"('{self.cfg.host}', {self.cfg.port}): {exc.strerror or 'address already in use'}")
                self.status = "stopped"
                self.write_state()
                return 1
            script.uvicorn(self.log)
            await asyncio.sleep(min(0.3, self.cfg.startup_s * 0.1))
            self.log.line(f'INFO:     127.0.0.1:{40000 + os.getpid() % 20000} - "POST /generate HTTP/1.1" 200 OK')
            self.status = "ready"
            self.write_state()
            self.log.line(READY_LINE)
            engine_task = asyncio.create_task(self.engine.run())
            await self.stop_event.wait()
            engine_task.cancel()
            try:
                await asyncio.wait_for(runner.cleanup(), 2.0)
            except (asyncio.TimeoutError, Exception):
                pass
            return self.exit_code
        finally:
            state_task.cancel()

    async def _startup(self, script: StartupScript) -> None:
        s = self.cfg.startup_s
        script.before_load(self.log)
        self.status = "loading"
        self.write_state()
        start = time.monotonic()
        for done in range(script.shards + 1):
            if done in (0, script.shards) or done % 5 == 0:
                self.log.raw(script.shard_line(done, time.monotonic() - start))
            self.load_fraction = done / script.shards
            await asyncio.sleep(s * 0.6 / script.shards)
            if done % 8 == 0:
                self.write_state()
        script.after_load(self.log)
        await asyncio.sleep(s * 0.1)
        if self.cfg.crash_kind == "oom" or not self.mem.fits:
            self._die_oom()
            return
        script.kv_and_ready(self.log)
        await asyncio.sleep(s * 0.2)

    def _die_oom(self) -> None:
        rank = min(5, self.cfg.tp - 1)
        free = max(64, self.mem.total_mib - self.mem.used_mib - 900)
        faults.oom(self.log, rank, self.mem.total_mib / 1024, free)
        self._crashed("oom")
        self.exit_code = faults.EXIT_STATUS["oom"]

    def _crashed(self, kind: str) -> None:
        self.status = "crashed"
        self.crash_kind = kind
        self.engine.running.clear()
        self.log.sync()
        self.write_state()

    def _on_signal(self, sig: int) -> None:
        name = signal.Signals(sig).name
        if self.status == "hung" and sig == signal.SIGINT:
            return
        self.log.line(f"Received {name}; shutting down.")
        self.engine.stop()
        self.status = "stopped"
        self.write_state()
        if not self.stop_event.is_set():
            self.stop_event.set()
        else:
            os._exit(1)

    async def _fault(self, batch: int) -> None:
        kind = self.cfg.crash_kind
        rank = 3 % self.cfg.tp
        if kind == "hang":
            self.status = "hung"
            self.write_state()
            await self.hung.wait()
        if kind == "nccl":
            self.status = "hung"          # the collective never finishes: streams stall, then the watchdog fires
            self.write_state()
            await asyncio.sleep(2.0)
            faults.nccl_watchdog(self.log, rank, seq=40000 + self.engine.steps, timeout_ms=600000)
        else:
            faults.illegal_address(self.log, rank)
        self._crashed(kind)
        self._reset_connections()
        os._exit(faults.EXIT_STATUS[kind])

    def _reset_connections(self) -> None:
        """Close every open connection with a TCP reset, as a dead server's sockets do."""
        for transport in list(self.transports):
            sock = transport.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                except OSError:
                    pass
            transport.abort()

    # ------------------------------------------------------------------ HTTP
    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._access])
        app.router.add_get("/health", self.health)
        app.router.add_get("/health_generate", self.health)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/get_model_info", self.model_info)
        app.router.add_get("/metrics", self.metrics_page)
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/tokenize", self.tokenize)
        app.router.add_post("/detokenize", self.detokenize)
        return app

    @web.middleware
    async def _access(self, request: web.Request, handler):
        if self.status == "hung":
            await self.hung.wait()
        transport = request.transport
        if transport is not None:
            self.transports.add(transport)
        try:
            response = await handler(request)
        finally:
            if transport is not None:
                self.transports.discard(transport)
        if request.path not in ("/metrics", "/health"):
            peer = request.remote or "127.0.0.1"
            self.log.line(f'INFO:     {peer}:{request.transport.get_extra_info("peername", ("", 0))[1] if request.transport else 0}'
                          f' - "{request.method} {request.path} HTTP/1.1" {response.status} '
                          f'{"OK" if response.status == 200 else response.reason}')
        return response

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=200, text="")

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{
            "id": self.cfg.model, "object": "model", "created": self.created, "owned_by": OWNED_BY,
            "root": self.cfg.model, "max_model_len": CONTEXT_LEN}]})

    async def model_info(self, request: web.Request) -> web.Response:
        return web.json_response({"model_path": f"/models/{self.cfg.model}", "tokenizer_path": f"/models/{self.cfg.model}",
                                  "is_generation": True, "simulated": True})

    async def metrics_page(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    async def tokenize(self, request: web.Request) -> web.Response:
        body = await _json(request)
        text = body.get("content", body.get("prompt"))
        if not isinstance(text, str):
            return _error(400, "expected 'prompt' (or 'content') as a string")
        tokens = self.vocab.tokenize(text)
        return web.json_response({"tokens": tokens, "count": len(tokens), "max_model_len": CONTEXT_LEN})

    async def detokenize(self, request: web.Request) -> web.Response:
        body = await _json(request)
        tokens = body.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            return _error(400, "expected 'tokens' as a list of integers")
        text = self.vocab.detokenize(tokens)
        return web.json_response({"prompt": text, "content": text})

    async def completions(self, request: web.Request) -> web.StreamResponse:
        body = await _json(request)
        if "prompt" not in body:
            return _error(400, "'prompt' is required")
        return await self._generate(request, body, prompt_tokens(self.vocab, body["prompt"]), chat=False)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await _json(request)
        if not isinstance(body.get("messages"), list):
            return _error(400, "'messages' is required")
        return await self._generate(request, body, chat_prompt_tokens(self.vocab, body["messages"]), chat=True)

    async def _generate(self, request: web.Request, body: dict[str, Any], n_prompt: int, chat: bool):
        if body.get("model") not in (None, "", self.cfg.model):
            return _error(404, f"The model `{body.get('model')}` does not exist.")
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if limit is None:
            limit = 16 if not chat else 2048
        if not isinstance(limit, int) or limit < 1:
            return _error(400, "max_tokens must be a positive integer")
        writer = Writer(self.rng.randrange(1 << 30))
        ignore_eos = bool(body.get("ignore_eos", False))
        natural = writer.natural_length()
        count = limit if ignore_eos or natural >= limit else natural
        job = Request(prompt_tokens=n_prompt, output_tokens=count,
                      finish_reason="length" if count == limit else "stop", pieces=writer.piece)
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        self.engine.submit(job)
        if body.get("stream"):
            return await self._stream(request, body, job, rid, chat)
        pieces = []
        try:
            while (piece := await job.out.get()) is not None:
                pieces.append(piece)
        except asyncio.CancelledError:
            job.abandoned = True
            raise
        text = "".join(pieces)
        usage = _usage(job)
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text},
                      "finish_reason": job.finish_reason}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": job.finish_reason}
        return web.json_response({"id": rid, "object": "chat.completion" if chat else "text_completion",
                                  "created": int(time.time()), "model": self.cfg.model,
                                  "choices": [choice], "usage": usage})

    async def _stream(self, request: web.Request, body: dict[str, Any], job: Request, rid: str, chat: bool):
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        created = int(time.time())
        kind = "chat.completion.chunk" if chat else "text_completion"
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            doc = {"id": rid, "object": kind, "created": created, "model": self.cfg.model, "choices": choices}
            doc.update(extra)
            return b"data: " + json.dumps(doc, separators=(",", ":")).encode() + b"\n\n"

        try:
            if chat:
                await response.write(chunk([{"index": 0, "delta": {"role": "assistant", "content": ""},
                                             "logprobs": None, "finish_reason": None}]))
            while True:
                piece = await job.out.get()
                if piece is None:
                    break
                if chat:
                    choice = {"index": 0, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}
                else:
                    choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": None}
                await response.write(chunk([choice]))
            end = {"index": 0, "logprobs": None, "finish_reason": job.finish_reason}
            end.update({"delta": {}} if chat else {"text": ""})
            await response.write(chunk([end]))
            if include_usage:
                await response.write(chunk([], usage=_usage(job)))
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            job.abandoned = True
            raise
        return response


def _usage(job: Request) -> dict[str, int]:
    return {"prompt_tokens": job.prompt_tokens, "completion_tokens": job.generated,
            "total_tokens": job.prompt_tokens + job.generated}


async def _json(request: web.Request) -> dict[str, Any]:
    try:
        doc = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise web.HTTPBadRequest(text=json.dumps({"error": {"message": "body is not JSON", "code": 400}}),
                                 content_type="application/json") from None
    if not isinstance(doc, dict):
        raise web.HTTPBadRequest(text=json.dumps({"error": {"message": "body must be a JSON object", "code": 400}}),
                                 content_type="application/json")
    return doc


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"object": "error", "message": message, "type": "BadRequestError",
                              "code": status}, status=status)


def serve(cfg: SimConfig) -> int:
    """Run the simulated server until it is stopped or a fault ends it; the process exit status."""
    server = SimServer(cfg)
    return asyncio.run(server.main())
