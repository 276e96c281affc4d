"""The continuous-batching step loop: one decode step at a time, every running request gets a token.

Each step of a batch of B running requests lasts `step_time_s(B)`. Steps
are scheduled against absolute deadlines, so the time a step spends handing
out tokens does not add up over a long stream. New requests join at a step
boundary after a prefill step, as in sglang; finished or abandoned ones leave
at the next boundary.
"""
from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from .metrics import SimMetrics
from .sglang_log import LogWriter, decode_batch_line, prefill_batch_line
from .timing import StepTimer

DECODE_LOG_INTERVAL = 40     # sglang's default --decode-log-interval (steps)

_ids = itertools.count(1)


@dataclass
class Request:
    prompt_tokens: int
    output_tokens: int                   # how many tokens this request will get
    finish_reason: str                   # "length" or "stop"
    pieces: Callable[[], str]            # the text of the next token
    rid: int = field(default_factory=lambda: next(_ids))
    arrived: float = field(default_factory=time.monotonic)
    out: asyncio.Queue = field(default_factory=asyncio.Queue)   # str pieces, then None
    generated: int = 0
    first_token_at: float | None = None
    last_token_at: float | None = None
    abandoned: bool = False

    @property
    def done(self) -> bool:
        return self.generated >= self.output_tokens


class Engine:
    def __init__(self, timer: StepTimer, metrics: SimMetrics, log: LogWriter, max_running: int,
                 kv_tokens: int, fault_at: int | None = None,
                 on_fault: Callable[[int], Awaitable[None]] | None = None,
                 prefill_s: Callable[[int], float] | None = None,
                 graph_max_bs: int | None = None, eager_step_s: float = 0.0,
                 jitter: Callable[[], float] | None = None):
        self.timer = timer
        self.metrics = metrics
        self.log = log
        self.max_running = max_running
        self.kv_tokens = max(1, kv_tokens)
        self.fault_at = fault_at
        self.on_fault = on_fault
        self.prefill_s = prefill_s or (lambda tokens: timer.step_time_s(1) * (1 + tokens / 1024))
        self.graph_max_bs = graph_max_bs
        self.eager_step_s = eager_step_s
        self.jitter = jitter or (lambda: 1.0)
        self.retracted = 0
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.steps = 0
        self.stopped = False
        self._wake = asyncio.Event()
        self._window_tokens = 0
        self._window_start = time.monotonic()
        self.gen_throughput = 0.0

    # ------------------------------------------------------------ requests
    def submit(self, request: Request) -> None:
        self.waiting.append(request)
        self.metrics.num_queue_reqs.set(len(self.waiting))
        self._wake.set()

    def used_tokens(self) -> int:
        return sum(r.prompt_tokens + r.generated for r in self.running)

    def decode_step_s(self, batch: int) -> float:
        """One decode step: the timer's, plus the eager cost above the largest CUDA-graph batch, with noise."""
        eager = self.eager_step_s if self.graph_max_bs is not None and batch > self.graph_max_bs else 0.0
        return (self.timer.step_time_s(batch) + eager) * self.jitter()

    def _retract(self) -> None:
        """The KV pool can't hold the next token of every running request: the newest go back to the queue
        (their tokens so far are kept; they are prefilled again when readmitted), as sglang retracts."""
        retracted = 0
        while len(self.running) > 1 and self.used_tokens() + len(self.running) > self.kv_tokens:
            request = self.running.pop()
            self.waiting.appendleft(request)
            retracted += 1
        if retracted:
            self.retracted += retracted
            self.log.line(f"KV cache pool is full. Retract requests. #retracted_reqs: {retracted}, "
                          f"#new_token_ratio: 0.7000 -> 1.0000", 0)

    # ------------------------------------------------------------ the loop
    async def run(self) -> None:
        deadline = time.monotonic()
        while not self.stopped:
            self._drop_abandoned()
            if not self.running and not self.waiting:
                self._publish(0.0)
                self._wake.clear()
                await self._wake.wait()
                deadline = self._window_start = time.monotonic()
                self._window_tokens = 0
                continue
            admitted = self._admit()
            self._retract()
            admitted = [r for r in admitted if r in self.running]
            batch = len(self.running)
            # the fault fires at N streams in flight, queued ones included: on a loaded machine the client
            # may not get all N into one batch before the first ones finish, and the story is "dies at N streams"
            if self.fault_at is not None and batch + len(self.waiting) >= self.fault_at and self.on_fault is not None:
                self._log_decode(batch)
                await self.on_fault(batch)
                return
            if admitted:
                new_tokens = sum(r.prompt_tokens + r.generated for r in admitted)
                self.metrics.prompt_tokens.inc(new_tokens)
                self.log.line(prefill_batch_line(len(admitted), new_tokens, self.used_tokens() / self.kv_tokens,
                                                 batch - len(admitted), len(self.waiting)), 0)
                deadline = await self._sleep_until(deadline + self.prefill_s(new_tokens))
            deadline = await self._sleep_until(deadline + self.decode_step_s(batch))
            self._emit(time.monotonic())
            self.steps += 1
            if self.steps % DECODE_LOG_INTERVAL == 0:
                self._log_decode(len(self.running))

    async def _sleep_until(self, deadline: float) -> float:
        """Sleep to an absolute deadline; a loop far behind restarts its clock instead of bursting."""
        delay = deadline - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
            return deadline
        if delay < -0.25:
            return time.monotonic()
        return deadline

    def _admit(self) -> list[Request]:
        admitted = []
        while self.waiting and len(self.running) < self.max_running:
            request = self.waiting[0]
            if request.abandoned:
                self.waiting.popleft()
                continue
            need = request.prompt_tokens + request.generated + 1
            if self.running and self.used_tokens() + need > self.kv_tokens:
                break          # no room in the KV pool: it waits in the queue (queueing beyond capacity)
            self.waiting.popleft()
            self.running.append(request)
            admitted.append(request)
        return admitted

    def _emit(self, now: float) -> None:
        still = []
        for request in self.running:
            if request.abandoned:
                continue
            request.out.put_nowait(request.pieces())
            request.generated += 1
            if request.first_token_at is None:
                request.first_token_at = now
                self.metrics.ttft.observe(now - request.arrived)
            elif request.last_token_at is not None:
                self.metrics.inter_token.observe(now - request.last_token_at)
            request.last_token_at = now
            self._window_tokens += 1
            if request.done:
                self._finish(request, now)
            else:
                still.append(request)
        self.metrics.generation_tokens.inc(len(self.running))
        self.running = still
        self._publish(None)

    def _finish(self, request: Request, now: float) -> None:
        request.out.put_nowait(None)
        self.metrics.num_requests.inc()
        self.metrics.e2e.observe(now - request.arrived)
        if request.generated > 1 and request.first_token_at is not None:
            self.metrics.tpot.observe((now - request.first_token_at) / (request.generated - 1))

    def _drop_abandoned(self) -> None:
        if any(r.abandoned for r in self.running):
            self.running = [r for r in self.running if not r.abandoned]

    def _publish(self, throughput: float | None) -> None:
        used = self.used_tokens()
        self.metrics.num_running_reqs.set(len(self.running))
        self.metrics.num_queue_reqs.set(len(self.waiting))
        self.metrics.num_used_tokens.set(used)
        self.metrics.token_usage.set(round(used / self.kv_tokens, 4))
        if throughput is not None:
            self.gen_throughput = throughput
            self.metrics.gen_throughput.set(throughput)

    def _log_decode(self, batch: int) -> None:
        now = time.monotonic()
        elapsed = now - self._window_start
        throughput = self._window_tokens / elapsed if elapsed > 0 else 0.0
        self._window_tokens, self._window_start = 0, now
        self._publish(throughput)
        used = self.used_tokens()
        self.log.line(decode_batch_line(batch, used, used / self.kv_tokens, throughput, len(self.waiting)), 0)

    def stop(self) -> None:
        self.stopped = True
        self._wake.set()
