"""Watch one launched server: its log, its readiness, its end, and why it ended."""
from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from ..fmt import clock
from ..hosts import HostError
from ..session import HostSession
from .triage import Triage, TriageResult, classify_text
from .triage.process import ProcessEvidence, judge
from ..store import crashes, launches
from .engine_death import evidence, recheck_clean_exit
from . import launch_state, unreached
from .launch_state import CrashFound, Ready, StopSeenElsewhere
from .process_launch import await_exit_status, probe, settle
from .backend import backend_for
from .logtail import LogTail
from ..store.launches import LaunchRecord

if TYPE_CHECKING:
    from .launch import EffectiveReader

# How long vLLM's own "ready" lines wait for /health before they are believed alone (a port a
# tunnel cannot reach); its HTTP server binds a second or two after them.
VLLM_LOG_READY_GRACE_S = 20.0
# Classes that mean the server is finished even if its process lingers (a hang after NCCL, ...).
FATAL_WHILE_RUNNING = {"cuda-illegal-address", "oom", "nccl", "engine-dead"}


class ServerMonitor:
    """Follows a record until the server ends; reports through plain callbacks.

    on_lines(list[str])          new log lines, in order, batched
    on_state(LaunchRecord)       any state change (ready, crashed, stopped, ...)
    on_crash(dict)               a crash record was written
    """

    def __init__(self, session: HostSession, record: LaunchRecord,
                 on_lines: Callable[[list[str]], None] | None = None,
                 on_state: Callable[[LaunchRecord], None] | None = None,
                 on_crash: Callable[[dict[str, Any]], None] | None = None,
                 poll_s: float = 1.0, sweep: Callable[[], str | None] | None = None,
                 hang_after_s: float = 60.0):
        self.session = session
        self.record = record
        self.backend = backend_for(session.profile)   # chosen once, as the host was
        self.on_lines = on_lines or (lambda lines: None)
        self.on_state = on_state or (lambda record: None)
        self.on_crash = on_crash or (lambda doc: None)
        self.poll_s = poll_s
        self.sweep = sweep or (lambda: None)  # the host runtime says which sweep was running
        self.triage = Triage()
        self.tail = LogTail(session.host, record.log, 0) if record.log else None
        self.crash_doc: dict[str, Any] | None = None
        self.effective: dict[str, Any] | None = None  # flags the server says it runs with (from its log)
        self._effective_reader: EffectiveReader | None = None
        self.seen: deque[str] = deque(maxlen=20000)  # the latest lines handed on, for a view opened later
        self.handed = 0  # lines handed on so far: the last one in `seen` is the log's line `handed`
        self.hang_after_s = hang_after_s
        self._last_line_at = time.monotonic()
        self._unhealthy_since: float | None = None
        self._log_ready_at: float | None = None
        self.unreadable_lines = 0  # log lines a reader could not take (skipped; following went on)
        self.tail_failures = 0     # times the tail itself failed and was started again
        self.last_log_problem: str | None = None

    async def run(self) -> LaunchRecord:
        tail_task = asyncio.create_task(self._follow_log()) if self.tail else None
        try:
            while self.record.live:
                await self._poll()
                if self.record.live:
                    await asyncio.sleep(self.poll_s)
            if tail_task:
                await asyncio.sleep(0.3)  # let the last lines arrive
        finally:
            if tail_task:
                tail_task.cancel()
                try:
                    await tail_task
                except (asyncio.CancelledError, Exception):
                    pass
        if self.record.state == "crashed" and self.crash_doc is None:
            await self._write_crash()
        return self.record

    async def _follow_log(self) -> None:
        """Read the log; hand lines on in batches at most every 0.1 s, so a burst of
        10k lines/s costs the receiver ten calls a second, not ten thousand.

        A log is anyone's text: a line that a reader cannot take (triage, the effective
        args) is counted in `unreadable_lines` and skipped, and a tail that fails starts
        again from its offset. Nothing a log holds ends following: a fatal line after it
        must still be seen."""
        tail = self.tail
        if tail is None:  # no log to follow (run() starts this only with one)
            return
        pending: list[str] = []

        async def flush_loop() -> None:
            while True:
                await asyncio.sleep(0.1)
                if pending:
                    batch = pending[:]
                    pending.clear()
                    self._hand_on(batch)
                    self._guarded(self._check_log_verdict)

        flusher = asyncio.create_task(flush_loop())
        try:
            while True:
                try:
                    async for line in tail.lines(follow=True):
                        pending.append(line)
                        self._last_line_at = time.monotonic()
                        self._guarded(self._take_line, line)
                except Exception as exc:  # noqa: BLE001 - the tail again, from its offset
                    self.tail_failures += 1
                    self.last_log_problem = f"log tail failed ({type(exc).__name__}); following again"
                await asyncio.sleep(tail.retry_s)  # never a busy loop, whatever ended the tail
        finally:
            flusher.cancel()
            if pending:
                self._hand_on(pending[:])

    def _take_line(self, line: str) -> None:
        self.triage.feed(line)
        if self.effective is None:
            self._read_effective(line)

    def _guarded(self, step: Callable[..., object], *args: Any) -> None:
        """`step(*args)`; an exception is counted and named, never raised into following."""
        try:
            step(*args)
        except Exception as exc:  # noqa: BLE001 - one line must never end following
            self.unreadable_lines += 1
            self.last_log_problem = f"a log line could not be read ({type(exc).__name__})"

    def _hand_on(self, batch: list[str]) -> None:
        """Lines go into `seen` only as they are handed on, so a view that starts from
        `seen_from()` and then takes each batch sees every line once, numbered right."""
        self.seen.extend(batch)
        self.handed += len(batch)
        self._guarded(self.on_lines, batch)

    def seen_from(self) -> tuple[int, list[str]]:
        """(the log line number of the first kept line, the kept lines)."""
        return self.handed - len(self.seen) + 1, list(self.seen)

    def _read_effective(self, line: str) -> None:
        from .launch import EffectiveReader

        if self._effective_reader is None:
            self._effective_reader = EffectiveReader()
        found = self._effective_reader.feed(line)  # llama.cpp states its settings over several lines
        if found is not None:
            self.effective = found.flags
            # kept with the launch, so a restarted console still shows them
            self.record.effective = {k: v if isinstance(v, (str, int, float, bool, type(None))) else str(v)
                                     for k, v in found.flags.items()}
            launch_state.save(self.session.name, self.record)
            self.on_state(self.record)

    def _check_log_verdict(self) -> None:
        record = self.record
        result = self.triage.result()
        if record.state == "loading" and result.ready_seen:
            if result.server == "vllm" and record.port:
                # vLLM says "Starting vLLM server on ..." and lists its routes before its HTTP server
                # binds the port: /health (in _poll) confirms; the log alone only after a grace
                if self._log_ready_at is None:
                    self._log_ready_at = time.monotonic()
                if time.monotonic() - self._log_ready_at < VLLM_LOG_READY_GRACE_S:
                    return
            if launch_state.move(self.session.name, record, Ready("its log says ready")):
                self.on_state(record)

    async def _poll(self) -> None:
        """One look, the profile's backend's (a process's group and exit file, a job's scheduler state)."""
        await self.backend.evidence(self)

    async def look_at_process(self) -> None:
        """A process launch's look: its group, its exit file, its log's and /health's word on readiness."""
        record = self.record
        try:
            state = await await_exit_status(self.session.host, record, await probe(self.session.host, record))
        except HostError as exc:  # the host is down: the launch's state is unknown until it answers
            if unreached.note_outage(self.session.name, record, exc):
                self.on_state(record)
            return
        if unreached.clear(record):  # the host answers again; the exit file below says if it ended
            launch_state.save(self.session.name, record)
            self.on_state(record)
        self._check_log_verdict()
        if record.state == "loading" and await self._health_ok():
            if launch_state.move(self.session.name, record, Ready("/health answered")):
                self.on_state(record)
        if not state.alive and record.live and not record.kill_requested:
            # another process (a campaign, the CLI, a second console) may have stopped it:
            # its stop is on disk, and a stop is not a crash
            saved = launches.stop_asked_elsewhere(self.session.name, record)
            if saved is not None and launch_state.apply(record, StopSeenElsewhere(saved)) and not record.live:
                self.on_state(record)   # that process has already seen its end
                return
        if settle(record, state):
            # vLLM exits 0 after its engine dies: the log says which it was
            await recheck_clean_exit(self.session.host, record)
            launch_state.save(self.session.name, record)
            if record.state == "crashed":
                await self._write_crash()
            self.on_state(record)
            return
        if record.state == "ready" and record.crash_class is None and record.port:
            await self._check_hang()
        if record.kill_requested or record.state == "stopping":
            return  # a stop was asked for: what the log says while it shuts down is noise of the stop
        verdict = self.triage.result()
        if verdict.cls == "engine-dead" and record.crash_class is None and record.port:
            # the log says the engine died; /health says whether it still answers (liveness)
            verdict = judge(verdict, ProcessEvidence(alive=state.alive, health_ok=await self._health_ok()))
        if verdict.cls in FATAL_WHILE_RUNNING and record.crash_class is None:
            await self._write_crash()
            self.on_state(record)

    async def _check_hang(self) -> None:
        """Alive, but /health has not answered and the log has said nothing for
        `hang_after_s`: a hang, which no log line can show (triage reads text only)."""
        now = time.monotonic()
        if await self._health_ok():
            self._unhealthy_since = None
            return
        if self._unhealthy_since is None:
            self._unhealthy_since = now
        silent = now - self._last_line_at
        if now - self._unhealthy_since < self.hang_after_s or silent < self.hang_after_s:
            return
        from .triage import TriageResult

        last = clock(time.time() - silent)
        verdict = TriageResult(
            cls="hang", line=None, excerpt=list(self.seen)[-10:], server=self.triage.result().server,
            summary=(f"the process is alive but /health has not answered for {now - self._unhealthy_since:.0f}s "
                     f"and the log has been silent since {last}"),
            ready_seen=True)
        await self._write_crash(verdict)
        self.on_state(self.record)

    async def _health_ok(self) -> bool:
        if not self.record.port:
            return False
        import httpx

        try:
            port = await self.session.host.forward_port(self.record.port)
            async with httpx.AsyncClient(timeout=2.0) as client:
                response = await client.get(f"http://127.0.0.1:{port}/health")
                return response.status_code == 200
        except (httpx.HTTPError, HostError, OSError):
            return False

    async def triage_after_stop(self) -> bool:
        """A server stopped right after it failed a level may not have had its fatal line read yet:
        triage the whole log now and record the crash if it shows one. True when it did. A class
        already known stays; an "unknown" one (the process ended badly before the log was read) is
        read again, since the log may name its cause."""
        if self.record.crash_class not in (None, "unknown"):
            return True
        verdict = await self._final_verdict(judged=False)  # the stop was ours: only the log can tell
        if verdict.cls in ("healthy", "unknown", "process-killed"):
            return False
        await self._write_crash(verdict)
        return True

    async def _write_crash(self, verdict: TriageResult | None = None) -> None:
        """Save the crash record (triaging the log unless a verdict is given) and report it."""
        verdict = verdict or await self._final_verdict()
        record = self.record
        self.crash_doc = crashes.write_crash(self.session.name, record, verdict, self.sweep()).to_doc()
        launch_state.move(self.session.name, record, CrashFound(verdict.cls, self.crash_doc["id"]))
        self.on_crash(self.crash_doc)

    async def _final_verdict(self, judged: bool = True) -> TriageResult:
        """Triage over the whole log as it is on disk now (the tail may lag behind), then,
        unless `judged` is False, corrected by how the process ended (see triage.process):
        an exit by signal is never healthy, a stop that was asked for never a crash."""
        verdict, tail, text = None, list(self.seen)[-10:], None
        if self.record.log:
            try:
                result = await self.session.host.run(["tail", "-c", "4000000", "--", self.record.log], timeout=60)
                if result.ok:
                    tail = result.stdout.splitlines()[-10:] or tail
                    text = result.stdout
                    found = classify_text(result.stdout)
                    if found.cls not in ("healthy", "unknown"):
                        verdict = found
            except HostError:
                pass
        verdict = verdict or self.triage.result()
        if not judged:
            return verdict
        return judge(verdict, evidence(self.record, text), tail)
