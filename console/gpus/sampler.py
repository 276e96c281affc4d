"""Live GPU samples of one host.

Over SSH (and locally when NVML is not usable) the GPUs come from ONE
long-lived `nvidia-smi --query-gpu=… -lms <interval>` stream, never an exec
per poll. Each line carries the GPU `count`, so a sample is complete as soon
as its last row arrives. Processes come from a `--query-compute-apps` read of
their own, a process each time, so it is not repeated while nothing moved:
every compute process holds memory on its GPU, so the list is read again when
a GPU's memory reading changes (a process came, went or grew; at most once per
`apps_min_gap_s`), and at least every `apps_max_age_s` whatever the readings
say. A GPU whose memory reads N/A can't tell, so then it is read every
`apps_min_gap_s`. When the stream dies or goes silent it is restarted with
backoff, and meanwhile the last sample is re-issued marked `sample_stale`,
with its time.

A one-shot reading (`sample_once`) asks for the process list in the GPU
stream's own session instead (`apps_first`): every session pays the host's
login shell, which on many hosts costs more than nvidia-smi itself. Both
queries start together there (`one_shot.command`).
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import replace
from typing import AsyncIterator, Sequence

from console.hosts import Host, HostError, LocalHost

from ..wait_at_most import wait_at_most
from . import fields as F
from . import one_shot, values
from .errors import not_found_message, recognise, smi_missing
from .flags import STALE_SAMPLES, FlagTracker
from .model import GPU, NO_DRIVER, OK, UNPARSED, UNREACHABLE, GPUProcess, Snapshot, known
from .parse_csv import SEP, BadLine, parse_app_line, parse_gpu_line
from .proc_stats import ProcStats, parse_ps, ps_argv

BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 30.0
MISSING_RETRY_S = 300.0  # no nvidia-smi on the host: someone has to install it; look again rarely
APPS_END = one_shot.APPS_END  # ends the process list at the head of an apps-first stream
APPS_MIN_GAP_S = 5.0    # the process list is read no more often than this
APPS_MAX_AGE_S = 30.0   # ... and at least this often, even when no GPU's memory moved
_NO_SAMPLE = object()   # the memory readings before the first sample


def backoff_delay(failures: int) -> float:
    return min(BACKOFF_MAX_S, BACKOFF_START_S * 2 ** max(0, failures - 1))


class Sampler:
    """Samples one host; iterate `snapshots()` for a Snapshot per sample.

    `smi_command` replaces the `nvidia-smi` argv (a stand-in, a container
    wrapper). `use_nvml=None` means: NVML for a LocalHost when it loads.
    `apps_first`: read the process list once, in the GPU stream's own session and
    started with it, before its first sample, rather than polling it in sessions of its own.
    `apps_min_gap_s` / `apps_max_age_s`: the process list's reads, see the module's docstring.
    """

    def __init__(self, host: Host, interval_s: float = 1.0, *, smi_command: Sequence[str] | None = None,
                 apps_min_gap_s: float = APPS_MIN_GAP_S, apps_max_age_s: float = APPS_MAX_AGE_S,
                 stale_after: int = STALE_SAMPLES,
                 use_nvml: bool | None = None, silence_s: float | None = None, simulated: bool = False,
                 apps_first: bool = False):
        self.host = host
        self.interval_s = max(0.05, float(interval_s))
        self.smi = list(smi_command) if smi_command else ["nvidia-smi"]
        self.apps_min_gap_s = apps_min_gap_s
        self.apps_max_age_s = max(apps_min_gap_s, apps_max_age_s)
        self.apps_reads = 0            # process-list reads started (each one a command on the host)
        self.silence_s = silence_s if silence_s is not None else max(10.0, 5 * self.interval_s)
        self.simulated = simulated
        self.apps_first = apps_first
        self.use_nvml = use_nvml if use_nvml is not None else (isinstance(host, LocalHost) and not smi_command)
        self.tracker = FlagTracker(stale_after)
        self.restarts = 0              # how many times the stream was (re)started after the first
        self.source = "nvidia-smi"
        self.fields = F.GPU_FIELD_LISTS[0]
        self._field_choice = 0
        self._processes: list[GPUProcess] = []
        self._processes_known = False
        self.proc_stats = ProcStats()          # each process's last CPU-time reading, for its CPU%
        self._apps_wakeup = asyncio.Event()   # set when the GPUs' memory moved, and to stop
        self._memory: object = _NO_SAMPLE        # the latest sample's memory readings (None: one is N/A)
        self._apps_memory: object = _NO_SAMPLE   # those readings when the process list was last read
        self._stopping = False
        self.last: Snapshot | None = None
        self.missing_retry_s = MISSING_RETRY_S
        self.next_retry_s: float | None = None  # the wait before the stream is started again

    # ------------------------------------------------------------ public

    async def snapshots(self) -> AsyncIterator[Snapshot]:
        if self.use_nvml:
            from .nvml import NVMLReader

            reader = NVMLReader.open()
            if reader is not None:
                self.source = "nvml"
                try:
                    async with contextlib.aclosing(self._nvml_loop(reader)) as snaps:
                        async for snap in snaps:
                            yield snap
                finally:
                    reader.close()
                return
        self._stopping = False
        # the stream's generator is closed here, explicitly, when this one is: left to the garbage
        # collector, its nvidia-smi child would outlive the consumer that stopped reading
        if self.apps_first:
            async with contextlib.aclosing(self._stream_loop()) as snaps:
                async for snap in snaps:
                    yield snap
            return
        apps = asyncio.create_task(self._poll_apps())
        try:
            async with contextlib.aclosing(self._stream_loop()) as snaps:
                async for snap in snaps:
                    yield snap
        finally:
            # Let a compute-apps read in flight finish rather than cancel it in the
            # middle of an SSH exchange (see the report on SSHHost.run); bounded.
            self._stopping = True
            self._apps_wakeup.set()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(apps), 3.0)
            apps.cancel()
            with contextlib.suppress(BaseException):
                await apps

    # ------------------------------------------------------------ nvidia-smi stream

    def stream_argv(self) -> list[str]:
        ms = max(50, int(round(self.interval_s * 1000)))
        gpus = self.smi + ["--query-gpu=" + ",".join(self.fields), "--format=csv,noheader,nounits", "-lms", str(ms)]
        if not self.apps_first:
            return gpus
        return one_shot.command(self.apps_argv(), gpus)

    def apps_argv(self) -> list[str]:
        return self.smi + ["--query-compute-apps=" + ",".join(F.APPS_FIELDS), "--format=csv,noheader,nounits"]

    async def _stream_loop(self) -> AsyncIterator[Snapshot]:
        failures = 0
        started_once = False
        while True:
            if started_once:
                self.restarts += 1
            started_once = True
            other_lines: list[str] = []
            reason = "stream ended"
            got_sample = False
            stream = None
            apps: list[str] | None = [] if self.apps_first else None   # the head's process list, until APPS_END
            smi_status: int | None = None   # apps-first: the GPU query's own status, from its last line
            status: int | None = None       # nvidia-smi's exit status, when it ended by itself
            try:
                stream = self.host.stream(self.stream_argv())
                async with stream as lines:
                    iterator = lines.__aiter__()
                    group: list[GPU] = []
                    while True:
                        try:
                            # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the line and
                            # drops a cancel that lands as the line arrives, and the consumer never stops
                            async with asyncio.timeout(self.silence_s):
                                line = await iterator.__anext__()
                        except StopAsyncIteration:
                            break
                        except TimeoutError:
                            reason = f"no output for {self.silence_s:g} s"
                            break
                        if apps is not None:
                            if line.strip() != APPS_END:
                                apps.append(line)
                                del apps[:-4096]
                            elif not self._take_apps(apps):
                                other_lines += apps[-20:]    # an error said instead of a list
                            if line.strip() == APPS_END:
                                apps = None
                            continue
                        if not line.strip():
                            continue
                        if self.apps_first and (ended := one_shot.exit_status(line)) is not None:
                            smi_status = ended
                            continue
                        try:
                            gpu, count = self._read_row(line)
                        except BadLine:
                            other_lines.append(line)
                            del other_lines[:-20]
                            continue
                        if group and any(g.key == gpu.key for g in group):
                            group = []  # a sample cut short: start again, never mix two
                        group.append(gpu)
                        if len(group) >= count:
                            failures = 0
                            got_sample = True
                            yield self._emit(group)
                            group = []
                # apps-first, the session's status is its pass-through's: nvidia-smi's came in a line
                status = smi_status if self.apps_first else stream.returncode
                if status is not None:
                    reason = f"nvidia-smi exited with status {status}"
            except HostError as exc:
                reason = str(exc)
                other_lines.append(reason)
                if exc.kind not in ("other", "command-timeout"):
                    failures += 1
                    yield self._down(UNREACHABLE, reason, failures)
                    await asyncio.sleep(backoff_delay(failures))
                    continue
            tail = other_lines + (stream.stderr_tail if stream is not None else [])
            if any("is not a valid field" in t for t in tail) and self._field_choice + 1 < len(F.GPU_FIELD_LISTS):
                self._field_choice += 1
                self.fields = F.GPU_FIELD_LISTS[self._field_choice]
                continue
            failures = 0 if got_sample else failures + 1
            error = recognise(tail)
            if not got_sample and smi_missing(status, tail):
                message = not_found_message(self.host.name) if self.smi == ["nvidia-smi"] \
                    else f"{self.smi[0]} not found on {self.host.name}"
                self.next_retry_s = self.missing_retry_s
                yield self._missing(message)
                await asyncio.sleep(self.missing_retry_s)
                continue
            self.next_retry_s = backoff_delay(max(1, failures))
            if error:
                yield self._down(error.state, error.message, max(1, failures), replace_rows=True)
            else:
                detail = "; ".join(t.strip() for t in tail[-3:] if t.strip())
                yield self._down(UNPARSED, reason + (f": {detail}" if detail else ""), max(1, failures))
            await asyncio.sleep(backoff_delay(max(1, failures)))

    def _read_row(self, line: str) -> tuple[GPU, int]:
        gpu = parse_gpu_line(line, self.fields)
        count = values.integer(line.split(SEP, 1)[0]) if self.fields[0] == "count" else 0
        if not known(count) or count < 1:
            raise BadLine("no GPU count")
        return gpu, count

    def _emit(self, gpus: list[GPU]) -> Snapshot:
        index_of = {g.uuid: g.index for g in gpus if known(g.uuid)}
        processes = [replace(p, gpu_index=index_of.get(p.gpu_uuid, p.gpu_index)) for p in self._processes]
        snap = Snapshot(state=OK, message="", gpus=list(gpus), processes=processes,
                        processes_known=self._processes_known, taken_at=time.time(),
                        host=self.host.name, source=self.source, simulated=self.simulated)
        self.tracker.apply(snap)
        self.last = snap
        self._note_memory(gpus)
        return snap

    def _note_memory(self, gpus: list[GPU]) -> None:
        """Wake the process-list reader when a GPU's memory differs from what its last read saw."""
        memory = tuple((g.key, g.memory_used_mib) for g in gpus)
        self._memory = memory if all(known(m) for _, m in memory) else None
        if self._apps_memory is _NO_SAMPLE:   # read with the first sample: that sample is its picture
            self._apps_memory = self._memory
        if self._memory is None or self._memory != self._apps_memory:
            self._apps_wakeup.set()

    def _down(self, state: str, reason: str, failures: int, replace_rows: bool = False) -> Snapshot:
        """What to show while there is no live sample.

        A recognised nvidia-smi error replaces the rows. Otherwise (connection
        lost, stream ended, silence) the last sample is shown, marked stale
        with the reason; with no last sample, `state` and the reason.
        """
        retry = f"; retrying in {backoff_delay(failures):g} s"
        if not replace_rows and self.last is not None and self.last.state == OK:
            return replace(self.last, sample_stale=True, stale_reason=reason + retry)
        if replace_rows:
            self.last = None
        return Snapshot(state=state, message=reason, taken_at=None, host=self.host.name,
                        source=self.source, sample_stale=True, stale_reason=reason + retry,
                        simulated=self.simulated)

    def _missing(self, message: str) -> Snapshot:
        """No nvidia-smi on the host: say so in plain words, with when it is looked for again."""
        self.last = None
        minutes = self.missing_retry_s / 60
        when = f"{minutes:g} min" if minutes >= 1 else f"{self.missing_retry_s:g} s"
        return Snapshot(state=NO_DRIVER, message=message, taken_at=None, host=self.host.name,
                        source=self.source, sample_stale=True, stale_reason=f"{message}; checking again in {when}",
                        simulated=self.simulated)

    # ------------------------------------------------------------ compute apps

    async def _poll_apps(self) -> None:
        while not self._stopping:
            read_at = time.monotonic()
            self._apps_memory = self._memory
            await self.read_apps()
            if not self._processes_known:   # no list: look again as soon as the gap allows
                self._apps_wakeup.set()
            # until a GPU's memory moves (or the list is too old), then no sooner than the gap allows
            await self._apps_wait(self.apps_max_age_s)
            while not self._stopping and (rest := self.apps_min_gap_s - (time.monotonic() - read_at)) > 0:
                await self._apps_wait(rest)

    async def _apps_wait(self, seconds: float) -> None:
        """Until the wake-up (a move of memory, or the stop) or `seconds`, whichever comes first."""
        if self._stopping:
            return
        await wait_at_most(self._apps_wakeup.wait(), seconds)
        self._apps_wakeup.clear()

    async def read_apps(self) -> None:
        self.apps_reads += 1
        try:
            result = await self.host.run(self.apps_argv(), timeout=max(10.0, self.apps_min_gap_s * 2))
        except HostError:
            self._processes_known = False
            return
        if not result.ok:
            self._processes_known = False
            return
        if self._take_apps(result.stdout.splitlines()):
            await self._read_proc_stats()

    async def _read_proc_stats(self) -> None:
        """Each listed process's CPU% and RSS, from `ps` over the same host connection; unknown
        where ps can't say (console/gpus/proc_stats.py)."""
        pids = [p.pid for p in self._processes if isinstance(p.pid, int)]
        read = None
        if pids:
            try:
                result = await self.host.run(ps_argv(pids), timeout=max(10.0, self.apps_min_gap_s * 2))
                # ps exits 1 when a pid has gone meanwhile: the lines of the others still count
                read = parse_ps(result.stdout) if result.returncode in (0, 1) else None
            except HostError:
                read = None
        self._processes = self.proc_stats.apply(self._processes, read)

    def _take_apps(self, lines: list[str]) -> bool:
        """The compute-apps lines as the process list; a list not read whole is no list (False)."""
        processes = []
        for line in lines:
            if not line.strip():
                continue
            try:
                processes.append(parse_app_line(line))
            except BadLine:
                self._processes_known = False
                return False
        self._processes = processes
        self._processes_known = True
        return True

    # ------------------------------------------------------------ NVML (local)

    async def _nvml_loop(self, reader) -> AsyncIterator[Snapshot]:
        while True:
            started = time.monotonic()
            result = await asyncio.to_thread(reader.read)
            if isinstance(result, str):
                error = recognise([result])
                snap = Snapshot(state=error.state if error else "gpu-error", message=result,
                                host=self.host.name, source="nvml", simulated=self.simulated)
                self.last = None
            else:
                gpus, processes = result
                self._processes, self._processes_known = processes, True
                snap = self._emit(gpus)
            yield snap
            await asyncio.sleep(max(0.0, self.interval_s - (time.monotonic() - started)))


async def sample_once(host: Host, *, smi_command: Sequence[str] | None = None, samples: int = STALE_SAMPLES,
                      interval_s: float = 0.2, timeout_s: float = 20.0, use_nvml: bool | None = None,
                      simulated: bool = False) -> Snapshot:
    """One sample with the process list, or as many more (up to `samples`) as the stale flag needs.

    The process list comes first, in the same session (`apps_first`), so
    flags that need it are meaningful from the first sample. A GPU is flagged
    stale after several candidate samples in a row; when a sample has no GPU
    part-way there, more samples would not change its flags, so it is the
    answer. Returns the error state if the host or nvidia-smi fails.
    """
    sampler = Sampler(host, interval_s, smi_command=smi_command, use_nvml=use_nvml, simulated=simulated,
                      silence_s=max(5.0, timeout_s / 2), apps_first=True)
    last: Snapshot | None = None
    seen = 0
    gen = sampler.snapshots()
    try:
        async with asyncio.timeout(timeout_s):
            async for snap in gen:
                last = snap
                if snap.state != OK or snap.sample_stale:
                    break
                if snap.processes_known:
                    seen += 1
                    if seen >= samples or not sampler.tracker.building():
                        break
    except TimeoutError:
        if last is None:
            last = Snapshot(state=UNREACHABLE, message=f"no sample within {timeout_s:g} s", host=host.name)
    finally:
        await gen.aclose()
    assert last is not None
    return last
