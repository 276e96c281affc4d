"""One host's long-lived work, independent of what is on screen.

A `HostRuntime` owns the GPU sampler, a `ServerMonitor` for every live launch
of its profile, the running sweep (the load generator's process and its live
`SweepView`) and the store watcher; it tells subscribers what happened with
the typed events of `events.py`. The Fleet keeps one per profile and the App
starts every one of them, so a host that is not on screen still has its
crashes detected, recorded and suggested. Panes render what the events say
and call the methods below; none of them holds a monitor or a process.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Callable

from ..hosts import CONNECTED, DOWN, HostError, HostStatus
from ..servers import lifecycle
from ..servers.backend import backend_for
from ..store import launches
from ..servers.monitor import ServerMonitor
from ..store.launches import LaunchRecord
from ..session import HostSession
from ..store.crashes import CrashRecord, read_crashes
from . import events as ev
from .settle import settle_launches
from .watch import StoreWatch

SWEEP_GRACE_S = 15.0     # a crash seen this long after a sweep ended is still tagged with it
SWEEP_REDRAW_S = 0.25    # at most four SweepProgress events a second while a sweep streams
CAMPAIGN_REFRESH_S = 2.0  # a running campaign's view (driver alive, elapsed, time left) at least this often
OWNERS_EVERY_S = 5.0


@dataclass
class ServerView:
    """What the Server tab draws for this host (configs are read from the host on request)."""

    configs: list = field(default_factory=list)
    latest: dict[str, LaunchRecord] = field(default_factory=dict)
    unmanaged: list = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    reached: bool = True  # False: the host did not answer; configs are named by the launch records alone


class HostRuntime:
    def __init__(self, session: HostSession, sampler_factory: Callable | None = None,
                 watch_interval_s: float = 0.5, monitor_poll_s: float = 1.0, metrics_poll_s: float = 1.0):
        self.session = session
        self.sampler_factory = sampler_factory
        self.watch_interval_s = watch_interval_s
        self.monitor_poll_s = monitor_poll_s
        self.metrics_poll_s = metrics_poll_s
        self._listeners: list[Callable[[ev.RuntimeEvent], None]] = []
        self._tasks: dict[str, asyncio.Task] = {}
        self._closed = False
        # GPUs
        self.snapshot = None
        self.gpu_interval_s: float | None = None
        self.owners: dict[int, str] = {}
        # servers
        self.monitors: dict[str, ServerMonitor] = {}
        self.launches: dict[str, LaunchRecord] = {}      # newest record of each config
        self.server_metrics: dict[str, ev.ServerMetricsSampled] = {}  # launch id -> its latest /metrics poll
        self.last_crash: CrashRecord | None = None
        self._announced: set[str] = set()                # crash ids already reported
        # the sweep
        self.sweep_proc = None                           # console.bench.process.SweepProcess while running
        self.sweep_view = None                           # console.bench.live.SweepView, the last one
        self.sweep_error: str | None = None
        self._sweep_label: str | None = None
        self._sweep_ended_at: float | None = None
        self._sweep_last_emit = 0.0
        # the campaign (its driver is its own process; this follows its saved state)
        self.campaign = None                             # console.store.campaigns.CampaignState, the latest
        self.campaign_view = None                        # its owner's reading (campaign.owner.Reading)
        self._campaign_at = 0.0
        # the link
        self.down_since: float | None = None
        self.last_good: float | None = time.time()
        self._status_hooked = False

    # ------------------------------------------------------------ events
    @property
    def name(self) -> str:
        return self.session.name

    @property
    def readonly(self) -> bool:
        return self.session.readonly

    def subscribe(self, callback: Callable[[ev.RuntimeEvent], None]) -> Callable[[], None]:
        self._listeners.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)
        return unsubscribe

    def emit(self, event: ev.RuntimeEvent) -> None:
        for callback in list(self._listeners):
            callback(event)

    # ------------------------------------------------------------ lifetime
    async def start(self, gpus: bool = True, servers: bool = True, watch: bool = True) -> None:
        """Start the parts asked for (each once); the App asks for all of them on every profile."""
        self._hook_status()
        if gpus:
            self._spawn("gpus", self._sample_gpus())
            self._spawn("owners", self._track_owners())
        if servers:
            self._spawn("servers", self.refresh_launches())
        if watch:
            self._spawn("watch", self._watch_store())

    def _spawn(self, key: str, coro) -> None:
        task = self._tasks.get(key)
        if task is not None and not task.done():
            coro.close()
            return
        self._tasks[key] = asyncio.create_task(coro, name=f"{self.name}-{key}")

    async def close(self) -> None:
        """Stop every loop and the sweep's process (launched servers keep running, detached)."""
        self._closed = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 5.0)
        if self.sweep_proc is not None:
            with contextlib.suppress(Exception):
                await self.sweep_proc.close()

    # ------------------------------------------------------------ the link (13.3)
    def _hook_status(self) -> None:
        if self._status_hooked:
            return
        self._status_hooked = True
        self.session.host.on_status(self._on_status)

    def _on_status(self, status: HostStatus) -> None:
        now = time.time()
        if status.state == DOWN:
            if self.down_since is None:
                self.down_since = status.since or now  # the first failure, not the latest retry
        elif status.state == CONNECTED:
            if self.down_since is not None and not self._closed and "servers" in self._tasks:
                # back after an outage: look at every live launch of the host again (one that
                # could not be reached before gets its monitor; one that ended, its end)
                self._spawn("reattach", self.refresh_launches())
            self.down_since = None
            self.last_good = now
        self.emit(ev.HostConnection(self.name, status.state, self.down_since is None,
                                    self.down_since or status.since, self.last_good, status.error))

    @property
    def reachable(self) -> bool:
        return self.down_since is None

    def _good(self) -> None:
        self.last_good = time.time()

    # ------------------------------------------------------------ GPUs
    async def _sample_gpus(self) -> None:
        from ..gpus import sampler_for

        factory = self.sampler_factory or (lambda s: sampler_for(s.profile, host=s.host))
        sampler = factory(self.session)
        self.gpu_interval_s = sampler.interval_s
        async with contextlib.aclosing(sampler.snapshots()) as snapshots:
            async for snap in snapshots:
                self.snapshot = snap
                if snap.state == "ok" and not snap.sample_stale:
                    self._good()
                self.emit(ev.GPUsSampled(self.name, snap))

    async def _track_owners(self) -> None:
        """Which launch config each process belongs to (by process group), every few seconds."""
        from ..servers.owners import owners

        while True:  # the one rule (servers.owners); the last map stays while the link is down
            self.owners = await owners(self.session, list(self.launches.values()), fallback=self.owners)
            await asyncio.sleep(OWNERS_EVERY_S)

    # ------------------------------------------------------------ servers
    async def refresh_launches(self) -> None:
        """Re-read the launch records; settle the ended ones (crash records written once); watch the live."""
        live: list[LaunchRecord] = []
        try:
            written = await settle_launches(self.session, self.running_sweep, live)
        except HostError:
            written = []
        found = (await asyncio.to_thread(launches.read_launches, self.name)).records
        for record in reversed(found):  # oldest first, so the newest of each config wins
            known = self.monitors.get(record.id)
            self.launches[record.config] = known.record if known else record
        for record in live:
            self.watch(record)
        if self.last_crash is None:
            crashes = await asyncio.to_thread(read_crashes, self.name)
            self.last_crash = crashes.records[0] if crashes.records else None
        for crash in written:
            self._crashed(crash)

    async def server_view(self) -> ServerView:
        """Configs from the host, the newest launch of each, servers gpudeck did not launch; a host that
        does not answer still gives its launches, under configs named by them (`reached` False)."""
        from ..servers import configs as cfgs

        await self.refresh_launches()
        view = ServerView()
        try:
            if not self.reachable:
                raise self.session.host.status.down_error(self.name)
            view.configs = await cfgs.discover(self.session)
            view.unmanaged, view.problems = await self._unmanaged()
        except HostError as exc:
            if not self.launches:
                raise
            # the host does not answer: its launches still show (a live one as unknown, with why)
            view.configs = [cfgs.ServerConfig(name=name, script=r.script or r.command or "")
                            for name, r in sorted(self.launches.items())]
            view.unmanaged, view.problems, view.reached = [], [str(exc)], False
        view.latest = dict(self.launches)
        return view

    async def unmanaged_now(self) -> list:
        """Inference servers running now that gpudeck did not launch (the Server tab re-checks
        them on every refresh, so a row for a process that has gone does not linger)."""
        return (await self._unmanaged())[0]

    async def _unmanaged(self) -> tuple[list, list]:
        from ..servers.owners import unmanaged

        found = await unmanaged(self.session)
        self._good()
        return found

    def watch(self, record: LaunchRecord) -> ServerMonitor:
        """Follow a live launch until it ends (its log, readiness, crash); one monitor per launch."""
        if record.id in self.monitors:
            return self.monitors[record.id]
        newest = self.launches.get(record.config)
        if newest is None or newest.started_at <= record.started_at:
            self.launches[record.config] = record
        monitor = ServerMonitor(
            self.session, record, poll_s=self.monitor_poll_s, sweep=self.running_sweep,
            on_lines=lambda lines, rid=record.id: self.emit(ev.ServerLogLines(self.name, rid, tuple(lines))),
            on_state=lambda rec: self.emit(ev.ServerStateChanged(self.name, rec)),
            on_crash=lambda doc: self._crashed(CrashRecord.from_doc(doc, doc["id"])))
        self.monitors[record.id] = monitor
        self._spawn(f"monitor-{record.id}", self._run_monitor(monitor))
        self._spawn(f"metrics-{record.id}", self._poll_metrics(monitor))
        return monitor

    async def _poll_metrics(self, monitor: ServerMonitor) -> None:
        """The launch's own /metrics while it lives (ServerMetricsSampled, about 1 Hz)."""
        from .metrics_poll import poll_metrics

        if not monitor.backend.serves_on_host:  # a job's server listens on a compute node, not on the host
            return

        def sampled(event: ev.ServerMetricsSampled) -> None:
            self.server_metrics[event.record_id] = event  # for a view opened later
            self.emit(event)
        await poll_metrics(self.session.host, self.name, monitor.record, lambda: monitor.record.live,
                           sampled, self.metrics_poll_s)

    async def _run_monitor(self, monitor: ServerMonitor) -> None:
        await monitor.run()
        self.emit(ev.ServerStateChanged(self.name, monitor.record))

    def _crashed(self, crash: CrashRecord) -> None:
        if crash.id in self._announced:
            return
        self._announced.add(crash.id)
        if self.last_crash is None or crash.time >= self.last_crash.time:
            self.last_crash = crash
        self.emit(ev.CrashRecorded(self.name, crash))
        if not self.readonly:
            self._spawn(f"suggest-{crash.id}", self._suggest(crash))

    async def _suggest(self, crash: CrashRecord) -> None:
        from profiles.atomic import StateFileError
        from profiles.tasks import BoardReadOnly

        from ..store.suggest import offer_crash

        try:  # offered on the Tasks tab, never added silently
            if await asyncio.to_thread(offer_crash, self.name, crash) is not None:
                self.emit(ev.TasksChanged(self.name))
        except (BoardReadOnly, StateFileError):
            pass

    def crashed_class(self) -> str | None:
        """The crash class of a config whose newest launch crashed (or hangs while alive), else None."""
        for record in self.launches.values():
            if record.shown_state == "crashed":
                return record.crash_class or "crashed"
        return None

    def effective_flags(self, config: str) -> dict | None:
        record = self.launches.get(config)
        monitor = self.monitors.get(record.id) if record else None
        if monitor is not None and monitor.effective is not None:
            return monitor.effective
        return record.effective if record is not None else None

    def seen_lines(self, record_id: str) -> tuple[int, list[str]] | None:
        """(number of the first kept line, the lines a watched launch has handed on so far)."""
        monitor = self.monitors.get(record_id)
        return monitor.seen_from() if monitor is not None else None

    async def read_log(self, record: LaunchRecord, lines: int = 5000) -> tuple[int, list[str]]:
        """The last `lines` of a launch's log and the number of its first line.

        One look at the file: its size is read once and both the line count and the
        tail come from that many bytes, so a log still being written can't shift the
        numbers; a last line without its newline yet counts as a line."""
        script = ('s=$(wc -c < "$1") || exit 1; head -c "$s" -- "$1" | wc -l; '
                  'head -c "$s" -- "$1" | tail -n "$2"')
        result = await self.session.host.run(["sh", "-c", script, "sh", record.log, str(int(lines))], timeout=30)
        if not result.ok:
            raise HostError("other", result.stderr.strip() or f"cannot read {record.log}")
        head, _, body = result.stdout.partition("\n")
        if not head.strip().isdigit():
            raise HostError("other", f"cannot read {record.log}")
        partial = bool(body) and not body.endswith("\n")
        got = [line.rstrip("\r") for line in body.split("\n")]  # only newline ends a line, as for wc
        if not partial:
            got.pop()  # what follows the last newline is nothing
        total = int(head) + (1 if partial else 0)
        return max(1, total - len(got) + 1), got

    async def preflight(self, port: int | None) -> list:
        """What to warn about before a launch (port taken, GPU memory held)."""
        return await lifecycle.preflight(self.session, port)

    async def group_of(self, record: LaunchRecord) -> list:
        """The processes in a launch's process group now (what a kill would end)."""
        from ..servers.procs import processes

        if (record.pgid or 0) <= 1:   # never treat group 0/1 as the server's own
            return []
        return [p for p in await processes(self.session.host) if p.pgid == record.pgid]

    async def launch(self, config) -> LaunchRecord:
        record = await lifecycle.launch(self.session, config.name, config.script, config.flags, config.port)
        self.watch(record)
        return record

    async def stop(self, record: LaunchRecord, progress=None):
        live = self.monitors.get(record.id)
        result = await lifecycle.stop(self.session, live.record if live else record, progress=progress)
        self.emit(ev.ServerStateChanged(self.name, live.record if live else record))
        return result

    async def adopt(self, pid: int) -> LaunchRecord:
        record = await lifecycle.adopt(self.session, pid)
        self.watch(record)
        return record

    # ------------------------------------------------------------ the sweep
    def running_sweep(self) -> str | None:
        """The sweep running now, or that ended within SWEEP_GRACE_S (it may have ended *because*
        the server died, a poll before the monitor noticed): what a crash record is tagged with."""
        if self._sweep_label and (self._sweep_ended_at is None
                                  or time.time() - self._sweep_ended_at < SWEEP_GRACE_S):
            return self._sweep_label
        return None

    @property
    def sweeping(self) -> bool:
        return self.sweep_proc is not None

    async def route(self, url: str):
        """How this machine reaches `url` (console.bench.route: the one rule, a tunnel when needed)."""
        from ..bench.route import route

        return await route(self.session.host, self.name, backend_for(self.session.profile), url)

    async def list_models(self, url: str) -> list[str]:
        from ..bench.endpoint import list_models

        return await list_models((await self.route(url)).url)

    # the Bench tab's saved state: read and written in a worker thread, never on the event loop
    async def bench_url(self) -> str | None:
        """The URL the Bench tab's form starts with (console.bench.route.default_url)."""
        from ..bench.route import default_url

        return await asyncio.to_thread(default_url, self.name, self.session.profile.server.url)

    async def bench_form(self) -> dict:
        """The Bench form's last settings on this profile (console.bench.form_memory)."""
        from ..bench import form_memory

        return await asyncio.to_thread(form_memory.load, self.name)

    async def remember_bench_form(self, values: dict) -> None:
        from ..bench import form_memory

        await asyncio.to_thread(form_memory.save, self.name, values)

    async def larger_sweep_than_before(self, levels: str) -> tuple[int, int] | None:
        """(new, largest before) when `levels` goes beyond every sweep before on this profile."""
        from ..bench import form_memory

        return await asyncio.to_thread(form_memory.larger_than_before, self.name, levels)

    async def saved_runs(self) -> list[dict]:
        """This profile's saved runs, newest first (console.bench.results.list_runs)."""
        from ..bench.results import list_runs

        return await asyncio.to_thread(list_runs, self.name)

    async def saved_run(self, path: str) -> dict:
        """One saved run's document; StateFileError when it cannot be read."""
        from ..bench.results import load_run

        return await asyncio.to_thread(load_run, path)

    async def saved_timeline(self, path: str, run_id: str = ""):
        """A saved run's timeline, shaped for a chart (console.bench.timeline_view.TimelineData), or None
        when the run has none (a run from before timelines); StateFileError when it cannot be read."""
        from ..bench.timeline_view import chart_data
        from ..store.timeline import read_timeline

        def look():
            tl = read_timeline(path)
            return chart_data(tl, run_id) if tl is not None else None
        return await asyncio.to_thread(look)

    async def latest_saved_view(self):
        """The newest saved run as the Bench tab draws it (a SweepView), or None when there is none;
        StateFileError when it cannot be read."""
        from ..bench.live import view_from_run
        from ..bench.results import list_runs, load_run

        def look():
            runs = list_runs(self.name)
            return view_from_run(load_run(runs[0]["path"])) if runs else None
        return await asyncio.to_thread(look)

    async def start_sweep(self, values: dict, launcher: Callable | None = None) -> None:
        """Start the load generator for the form's values; its run is saved under THIS profile."""
        from ..bench.live import SweepView
        from ..bench.process import SweepProcess, sweep_argv

        if self.readonly:
            raise RuntimeError("read-only: sweeps cannot be started")
        if self.sweep_proc is not None:
            raise RuntimeError("a sweep is already running: stop it first (s)")
        try:
            found = await self.route(values["url"])
        except Exception as exc:  # noqa: BLE001 - a tunnel that can't open is reported, not raised
            raise RuntimeError(f"cannot reach {values['url']} through the SSH tunnel: {exc}") from None
        # the run records the server's URL, never the tunnel's end
        argv = (launcher or sweep_argv)({**values, "url": found.url, "server_port": found.server_port,
                                         "server_url": found.server_url}, self.name, found.tunnelled)
        proc = SweepProcess(argv)
        try:
            await proc.start()
        except OSError as exc:
            raise RuntimeError(f"cannot start the load generator: {exc}") from None
        self.sweep_view = SweepView()
        self.sweep_error = None
        self.sweep_proc = proc
        self._sweep_label = None
        self._sweep_ended_at = None
        self._emit_sweep(force=True)
        self._spawn("sweep", self._read_sweep(proc))

    def stop_sweep(self) -> bool:
        if self.sweep_proc is None:
            return False
        self.sweep_proc.stop()
        return True

    async def _read_sweep(self, proc) -> None:
        view = self.sweep_view
        try:
            async for event in proc.events():
                view.apply(event)
                kind = event.get("event")
                if kind == "level-start":
                    self._sweep_label = f"{view.run_id} level {event.get('concurrency')}"
                self._emit_sweep(force=kind in ("run-start", "level-start", "level-end", "run-end", "error"))
            code, stderr = await proc.finish()
            if code not in (0, 3) or (stderr and not view.levels):
                self.sweep_error = stderr.splitlines()[-1] if stderr else f"load generator exited {code}"
        finally:
            await proc.close()
            self._sweep_ended_at = time.time()
            self.sweep_proc = None
            view.running = False
            self._emit_sweep(force=True)

    def _emit_sweep(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._sweep_last_emit >= SWEEP_REDRAW_S:
            self._sweep_last_emit = now
            self.emit(ev.SweepProgress(self.name, self.sweep_view, self.sweep_proc is not None, self.sweep_error))

    # ------------------------------------------------------------ the store
    async def _watch_store(self) -> None:
        watch = StoreWatch(self.name)
        await asyncio.to_thread(watch.changes)  # the first look only takes the baseline
        await self._report_problems()
        await self._campaign_update()
        while True:
            await asyncio.sleep(self.watch_interval_s)
            try:
                changes = await asyncio.to_thread(watch.changes)
                await self._on_store_changes(changes)
                # a running campaign's time left moves on, and a driver that has written its ending
                # still exits after: looked at again until it is gone, so it never stays shown
                live = self.campaign is not None and (self.campaign.status == "running"
                                                      or (self.campaign_view is not None and self.campaign_view.alive))
                if changes.campaigns or (live and time.monotonic() - self._campaign_at >= CAMPAIGN_REFRESH_S):
                    await self._campaign_update()
            except (OSError, HostError) as exc:  # a full disk or a dropped host: look again next time
                from ..store.scan import first_time

                lines = first_time([f"{self.name}: could not look at its records ({exc})"])
                if lines:
                    self.emit(ev.StoreProblems(self.name, tuple(lines)))

    async def start_campaign(self) -> tuple[str, int]:
        """Start the profile's campaign file as a detached campaign; (id, driver pid)."""
        from ..campaign import control

        def go():
            state = control.create(self.name)
            return state.id, control.start(state)
        started = await asyncio.to_thread(go)
        await self._campaign_update()
        return started

    async def stop_campaign(self, campaign_id: str) -> int:
        from ..campaign import control

        return await asyncio.to_thread(control.stop, self.name, campaign_id)

    async def resume_campaign(self, campaign_id: str) -> int:
        from ..campaign import control

        def go():
            return control.spawn(control.prepare_resume(self.name, campaign_id))
        pid = await asyncio.to_thread(go)
        await self._campaign_update()
        return pid

    # ------------------------------------------------------------ records the panes draw
    async def measured_runs(self):
        """The profile's runs as the Roofline tab compares them (roofline.runs.RunsFound), read in a
        worker thread so no pane reads the store on the event loop."""
        from ..roofline.runs import load_runs

        return await asyncio.to_thread(load_runs, self.session.data_dir / "runs")

    async def reread_profile(self) -> str | None:
        """The profile's `[model]` read again from its file (an edit since the console started, or
        `profiles set`), so a reload or a re-opened host prices the model as the file says now;
        None, or why the file could not be read (the section in hand is kept then)."""
        from profiles import store

        try:
            fresh = await asyncio.to_thread(store.load, self.name)
        except Exception as exc:  # noqa: BLE001 - a broken file is said, the console keeps running
            return f"profile {self.name} not re-read: {exc}"
        self.session.profile.model = fresh.model
        return None

    async def profile_roofline(self) -> tuple[object | None, str]:
        """The profile's roofline, or why there is none (roofline.from_profile.roofline_for), computed in
        a worker thread: the model's config.json and checkpoint index are read off the event loop."""
        from ..roofline.from_profile import roofline_for

        return await asyncio.to_thread(roofline_for, self.session.profile)

    async def roofline_of(self, inputs, checkpoint=None):
        """The roofline for these inputs (roofline.from_profile.compute_inputs), or the error saying
        why there is none, worked out in a worker thread: the demo model alone has hundreds of
        quantisation patterns, and the console keeps drawing meanwhile."""
        return await asyncio.to_thread(roofline_or_error, inputs, checkpoint)

    async def task_board(self):
        """The profile's task board (console.store.task_board.TaskBoard), read in a worker thread."""
        from ..store.task_board import TaskBoard

        return await asyncio.to_thread(TaskBoard.for_profile, self.name, self.readonly)

    async def board_changed(self, board) -> bool:
        """Re-read `board` if its file changed (another console, the CLI); True when it did."""
        return await asyncio.to_thread(board.poll)

    async def offer_suggestions(self, board) -> list:
        """Offer every new crash and failed sweep level on the board (never a task); re-read it after."""
        from ..store.suggest import offer_new_on

        return await asyncio.to_thread(offer_new_on, board, self.name)

    async def edit_board(self, edit: Callable, *args, **kwargs):
        """One board edit (a TaskBoard method), written in a worker thread; its refusals propagate."""
        return await asyncio.to_thread(edit, *args, **kwargs)

    async def _campaign_update(self) -> None:
        """The latest campaign and its owner's reading (driver, progress, time left), read off the loop."""
        from ..campaign import owner
        from ..store import campaigns as campaign_state
        from ..store.scan import first_time

        def look():
            found = campaign_state.read_campaigns(self.name)     # a bad state file is one line; the others still show
            state = max(found.records, key=lambda s: s.created_at) if found.records else None
            return state, (owner.read(state) if state is not None else None), first_time(found.unreadable)
        self._campaign_at = time.monotonic()
        self.campaign, view, problems = await asyncio.to_thread(look)
        self.campaign_view = view
        if problems:
            self.emit(ev.StoreProblems(self.name, tuple(problems)))
        self.emit(ev.CampaignChanged(self.name, self.campaign, view))

    async def _report_problems(self) -> None:
        """Unreadable records, each named once per console (StoreProblems; the App shows them)."""
        from ..store.runs import read_runs
        from ..store.scan import first_time
        from ..store.tasks import read_tasks

        def scan() -> list[str]:
            lines = [u.line for u in read_runs(self.name).unreadable]
            lines += [u.line for u in read_crashes(self.name).unreadable]
            lines += [u.line for u in launches.read_launches(self.name).unreadable]
            lines += [u.line for u in read_tasks(self.name).unreadable]
            return first_time(lines)
        lines = await asyncio.to_thread(scan)
        if lines:
            self.emit(ev.StoreProblems(self.name, tuple(lines)))

    async def _on_store_changes(self, changes) -> None:
        if changes.runs or changes.crashes or changes.launches:
            await self._report_problems()
        for run_id in changes.runs:
            self.emit(ev.RunSaved(self.name, run_id))
        if changes.launches:
            await self.refresh_launches()  # a launch from another console or the CLI gets a monitor here
        for crash in changes.crashes:  # written by another process (a CLI call, another console)
            self._crashed(crash)
        offered = []
        # a launch's owner may read a crash only once its record is saved after the crash file
        if (changes.runs or changes.crashes or changes.launches) and not self.readonly:
            from ..store.suggest import offer_new

            with contextlib.suppress(Exception):
                offered = await asyncio.to_thread(offer_new, self.name)
        if changes.tasks or offered:
            self.emit(ev.TasksChanged(self.name))


def roofline_or_error(inputs, checkpoint=None):
    """compute_inputs' roofline, or the RooflineError/OSError that says why there is none."""
    from ..roofline import RooflineError
    from ..roofline.from_profile import compute_inputs

    try:
        return compute_inputs(inputs, checkpoint=checkpoint)
    except (RooflineError, OSError) as exc:
        return exc
