"""The campaign loop: for each cell launch, wait, sweep, stop, check the GPUs, save.

It drives the host through the same lifecycle code the Server tab uses
(`console.servers.lifecycle` and its `ServerMonitor`, which triages crashes
and writes crash records), and runs each sweep with the load generator in
its own process, reading its JSON-lines events. State is saved after every
step, so a campaign killed at any moment resumes without redoing a finished
cell, and never leaves a server of its own running: on resume, a cell caught
mid-way has its server stopped before it is redone.
"""
from __future__ import annotations

import asyncio
import posixpath
import sys
import time
from typing import TYPE_CHECKING, Callable

from profiles.atomic import private_dirs, write_atomic
from profiles.profile import Profile

from ..wait_at_most import wait_at_most
from ..fmt import clock
from ..hosts import HostError
from ..servers import configs as cfgs
from ..servers import lifecycle
from ..servers.backend import LaunchBackend, backend_for
from ..store import launches
from ..servers.monitor import ServerMonitor
from ..session import HostSession
from . import lock as locks
from . import owner
from .owner import CampaignStopped
from ..store import campaigns as st
from .conditions import sample as sample_conditions
from .grid import GridError, derive
from .order import round_order
from .spec import CampaignError, CampaignSpec, check_dataset, from_dict

if TYPE_CHECKING:
    from ..bench.process import SweepProcess

STEP_RETRIES = 5            # an SSH drop during one step is retried this many times, with backoff


class ServerStillRunning(Exception):
    """A cell's server outlived its stop (Slurm still shows the job): the campaign goes no further."""


def plan_cells(spec: CampaignSpec) -> list[st.Cell]:
    """The cells in the order they run: the plain configs, then each grid's combinations."""
    from .grid import cell_name

    cells = [st.Cell(name=name, base=name) for name in spec.configs]
    for grid in spec.grids:
        for combo in grid.combinations():
            cells.append(st.Cell(name=cell_name(grid.base, combo), base=grid.base, flags=combo))
    seen: set[str] = set()
    for cell in cells:
        if cell.name in seen:
            raise ValueError(f"the campaign names {cell.name} twice")
        seen.add(cell.name)
    return cells


def remote_script_path(base_script: str, campaign_id: str, cell_name: str) -> str:
    """Where a grid cell's derived script goes on the host: beside its base script, a hidden file
    whose name is built only from the checked id and the cell's file-safe stem (no `/`, no leading `-`)."""
    folder = posixpath.dirname(base_script) or "."
    name = f".gpudeck-{st.check_id(campaign_id)}-{st.file_stem(cell_name)}.sh"
    path = posixpath.join(folder, name)
    if posixpath.dirname(path) != folder:
        raise st.PathRefused(f"{path}: outside {folder}")
    return path


async def write_remote_script(host, path: str, text: str) -> None:
    """Write the derived script on the host (the path is an argument, never shell text) and make it runnable."""
    wrote = await host.run(["sh", "-c", 'cat > "$1" && chmod 755 "$1"', "sh", path], input=text, timeout=30)
    if not wrote.ok:
        raise OSError(f"cannot write {path}: {(wrote.stderr or wrote.stdout).strip()}")


def bench_argv(spec: CampaignSpec, url: str, profile: str, tunnelled: bool, server_port: int | None,
               server_url: str | None = None, levels: list[int] | None = None) -> list[str]:
    s = spec.sweep
    argv = [sys.executable, "-m", "console.bench", "--url", url,
            "--concurrency", ",".join(map(str, levels or s.levels)),
            "--api", s.api, "--input-len", str(s.input_len), "--output-len", str(s.output_len),
            "--profile", profile, "--events", "--no-suggest", "--gpu-idle-mib", f"{spec.policy.gpu_idle_mib:g}"]
    if s.num_prompts:
        argv += ["--num-prompts", str(s.num_prompts)]
    elif s.prompts_per_stream:
        argv += ["--prompts-per-stream", str(s.prompts_per_stream)]
    if s.model:
        argv += ["--model", s.model]
    if s.dataset:   # fixed prompts (the same file another client reads), not input_len's made-up ones
        argv += ["--dataset", s.dataset]
    slo = {"ttft": s.slo.get("ttft_ms"), "tpot": s.slo.get("tpot_ms"), "e2el": s.slo.get("e2el_ms")}
    if spec.slo:    # the [slo] table's per-request limits, for goodput (console.campaign.slo_search)
        slo |= {k: spec.slo[f"{k}_ms"] for k in ("ttft", "tpot", "itl", "e2el") if f"{k}_ms" in spec.slo}
    slo_text = ",".join(f"{k}={v:g}" for k, v in slo.items() if v is not None)
    if slo_text:
        argv += ["--slo", slo_text]
    if tunnelled:
        argv.append("--tunnelled")
        if server_port:
            argv += ["--server-port", str(server_port)]
        if server_url:   # the run names the server, not the tunnel's throwaway local port
            argv += ["--server-url", server_url]
    return argv


def add_note(cell: st.Cell, text: str) -> None:
    """Add to the cell's note once: a cause every visit meets (no nvidia-smi) is said once, not per visit."""
    if text not in (cell.note or "").split("; "):
        cell.note = f"{cell.note}; {text}" if cell.note else text


def level_row(summary: dict) -> dict:
    """The few numbers of one level the campaign keeps and compares."""
    def stat(key: str, which: str):
        return (summary.get(key) or {}).get(which)

    row = {"concurrency": summary.get("concurrency"), "status": summary.get("status"),
           "completed": summary.get("completed"), "failed": summary.get("failed"),
           "output_throughput": summary.get("output_throughput"),
           "ttft_p50": stat("ttft_ms", "median"), "ttft_p99": stat("ttft_ms", "p99"),
           "tpot_p50": stat("tpot_ms", "median"), "tpot_p99": stat("tpot_ms", "p99"),
           "itl_p99": stat("itl_ms", "p99"), "good_requests": summary.get("good_requests"),
           "goodput": summary.get("goodput"), "note": _level_note(summary)}
    return st.clean_level(row)     # a figure outside its physical range is kept as unknown


def _level_note(summary: dict) -> str:
    died = summary.get("server_died")
    if isinstance(died, dict) and died.get("message"):
        return f"server died: {died['message']}"
    errors = summary.get("errors") or []
    return str(errors[0]) if errors else ""


class CampaignRunner:
    """Runs one campaign's remaining cells on its profile's host."""

    def __init__(self, state: st.CampaignState, profile: Profile, say: Callable[[str], None] | None = None,
                 backend: LaunchBackend | None = None):
        self.state = state
        self.spec = from_dict(state.spec, str(state.dir / "campaign.toml"))
        self.profile = profile
        self.backend = backend if backend is not None else backend_for(profile)   # chosen once per profile
        self.session = HostSession.open(profile)
        self.say = say or (lambda text: None)
        self.stop_requested = asyncio.Event()
        self._sweep: SweepProcess | None = None
        self._label: str | None = None
        self._saved_live = 0.0
        self._searched: dict | None = None   # this visit's highest load under the [slo] (slo_search)

    def request_stop(self) -> None:
        self.stop_requested.set()
        if self._sweep is not None:
            self._sweep.stop()

    def _save(self) -> None:
        st.save(self.state)

    def _save_quietly(self) -> bool:
        """Save where a failure must not stop what follows (a stop, the lock's release): say it, go on."""
        try:
            st.save(self.state)
            return True
        except (OSError, ValueError) as exc:
            self._log(f"could not save the campaign's state: {exc}")
            return False

    def _log(self, text: str) -> None:
        self.say(f"{clock(time.time())} {text}")

    async def run(self) -> st.CampaignState:
        state = self.state
        try:
            identity = await locks.host_identity(self.profile)
        except HostError as exc:
            owner.conclude(state, CampaignError(f"cannot tell which machine the profile is (for the lock): {exc}"))
            await self.session.host.close()
            return state
        port = locks.lock_port(self.profile, state.spec)
        try:
            locks.acquire(identity, port, state.id, state.profile)
        except locks.LockHeld:
            await self.session.host.close()
            raise
        ended: BaseException | None = None
        try:
            # the prompts file may have changed since the campaign was made: no launch for a bad one
            check_dataset(self.spec, str(state.dir / "campaign.toml"))
            owner.begin(state)
            await self._visit_all()
        except BaseException as exc:  # noqa: BLE001 - the owner says how it ended; every finished cell is kept
            ended = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            owner.conclude(state, ended, self._log)   # a full disk still releases the lock and closes the host
            locks.release(identity, port, state.id)
            await self.session.host.close()
        return state

    async def _visit_all(self) -> None:
        """Every cell once per round, rounds interleaved (A B C, C A B, ...) so drift hits every config alike."""
        state = self.state
        from .until_sure import most_rounds

        repeats = most_rounds(self.spec)   # with [policy] precision, a cell sure sooner stops sooner
        for rnd in range(repeats):
            for cell in round_order(state.cells, rnd):
                if self.stop_requested.is_set():
                    raise CampaignStopped()
                if cell.status in st.FINISHED or len(cell.rounds) > rnd:
                    continue
                if cell.status in st.IN_PROGRESS:
                    await self._recover(cell)
                await self._run_cell(cell)
                if self.spec.policy.stop_at_first_slo and cell.status == "done" and self._meets_slo(cell):
                    for rest in state.cells:
                        if rest.status == "queued":
                            rest.status, rest.note = "skipped", f"{cell.name} met every SLO first"
                    self._save()
                    return
            if self.spec.policy.prune and rnd + 1 < repeats:
                self._prune()

    def _prune(self) -> None:
        """Stop repeating configs whose interval's top is below the leader's bottom; the repeats go to the close ones."""
        from .compare import clearly_behind

        for name, why in clearly_behind(self.state):
            cell = self.state.cell(name)
            if cell is not None and cell.status == "queued":   # named from the state's own cells
                cell.status, cell.pruned, cell.note = "done", why, why
                self._log(f"{name}: {why}")
        self._save()

    def _end_visit(self, cell: st.Cell, conditions: dict, sweep_s: float | None) -> None:
        """A visit that measured every level: kept as one repeat, with per-request samples for the intervals."""
        from .samples import attach_samples

        if self._searched is None:   # a search attached each probe's samples as it went
            attach_samples(self.profile.name, cell.run_id, cell.levels)
        cell.rounds.append({"levels": list(cell.levels), "run_id": cell.run_id, "conditions": conditions,
                            **({"slo_search": self._searched} if self._searched is not None else {}),
                            "started_at": cell.started_at, "ended_at": time.time(),
                            "elapsed_s": round(time.time() - cell.started_at, 3) if cell.started_at else None,
                            "sweep_s": sweep_s})
        from .until_sure import after_visit

        verdict = after_visit(cell, self.spec)
        cell.status = "done" if verdict.done else "queued"
        if verdict.done:
            cell.rounds[-1]["ended_by"], cell.rounds[-1]["ended_why"] = verdict.ended_by, verdict.text

    # ------------------------------------------------------------ one cell

    async def _recover(self, cell: st.Cell) -> None:
        """A cell the last driver left mid-way: stop its server if it still runs, then redo it."""
        record = launches.get(self.profile.name, cell.launch_id)
        if record is not None and record.live:
            self._log(f"{cell.name}: stopping the server the interrupted run left ({record.id})")
            why = None
            try:
                result = await lifecycle.stop(self.session, record, grace_s=self.profile.server.kill_grace_s)
                why = result.running
            except (lifecycle.LaunchError, HostError) as exc:
                why = str(exc)
            if record.live:
                self._still_running(cell, f"the interrupted run's server: {why or record.state}")
        from .cut_runs import mark_interrupted

        if cell.status == "sweeping":
            mark_interrupted(self.profile.name, cell.run_id, f"campaign {self.state.id} driver died during this sweep")
        cell.note = f"redone after an interruption during {cell.status}"
        cell.status = "queued"
        self._save()

    async def _run_cell(self, cell: st.Cell) -> None:
        retries = 1 if self.spec.policy.on_crash == "retry" else 0
        while True:
            await self._attempt(cell)
            if cell.status == "crashed" and retries > 0 and not self.stop_requested.is_set():
                retries -= 1
                self._log(f"{cell.name}: crashed ({cell.crash_class}); retrying once as the policy says")
                continue
            return

    async def _attempt(self, cell: st.Cell) -> None:
        policy = self.spec.policy
        cell.attempts += 1
        cell.status, cell.started_at, cell.ended_at = "launching", time.time(), None
        cell.crash_class = cell.crash_record = None
        cell.levels, cell.run_id = [], None      # this visit's own (earlier visits keep theirs in `rounds`)
        self._searched = None
        self._save()
        try:
            config = await self._with_retries(lambda: self._script_for(cell))
        except (GridError, LookupError, OSError, HostError, ValueError) as exc:
            cell.status, cell.note, cell.ended_at = "start-failed", str(exc), time.time()
            self._save()
            return
        refused = self._infeasible(config)
        if refused:   # weights + KV cannot fit the memory it is given: a launch would only crash
            cell.status, cell.note, cell.ended_at = "skipped", refused, time.time()
            self._log(f"{cell.name}: skipped, {refused}")
            self._save()
            return
        if config.warnings:   # a config named EP8 that runs TP8: worth a task, whatever its numbers
            from ..store.suggest import suggest_from_promise

            suggest_from_promise(self.profile.name, cell.base, config.warnings[0])
        self._log(f"{cell.name}: launching {cell.script}")
        try:
            record = await lifecycle.launch(self.session, cell.name, config.script, flags=config.flags,
                                            port=config.port)
        except (lifecycle.LaunchError, HostError) as exc:
            cell.status, cell.note, cell.ended_at = "start-failed", f"launch: {exc}", time.time()
            self._save()
            return
        cell.launch_id, cell.status = record.id, "waiting"
        changed = asyncio.Event()
        monitor = ServerMonitor(self.session, record, on_state=lambda rec: changed.set(),
                                on_crash=lambda doc: changed.set(), poll_s=0.5, sweep=lambda: self._label)
        watcher = asyncio.create_task(monitor.run())
        ready = False
        conditions: dict = {}
        sweep_s = None
        try:   # from here on the server runs: whatever fails (a save on a full disk too), the finally stops it
            self._save()
            ready = await self._wait_ready(record, changed, policy.ready_timeout_s)
            if ready:   # launch and readiness stay outside the timed window: the sweep starts only now
                conditions = await sample_conditions(self.session, self.profile)
                cell.status = "sweeping"
                self._save()
                self._label = f"campaign {self.state.id} cell {cell.name}"
                began = time.monotonic()
                try:
                    if self.spec.slo:
                        await self._search_cell(cell, config.port)
                    else:
                        await self._sweep_cell(cell, config.port)
                finally:
                    self._label = None
                    sweep_s = round(time.monotonic() - began, 3)
            elif record.live:
                cell.note = f"not ready within {policy.ready_timeout_s:g} s"
        finally:
            # stop first, then save: a save that fails (a full disk) never leaves the server running
            still = None
            if record.live:
                cell.status = "stopping"
                try:
                    still = (await lifecycle.stop(self.session, record)).running
                except (lifecycle.LaunchError, HostError) as exc:
                    still = f"stop failed: {exc}"
                    add_note(cell, still)
                self._save_quietly()
            if record.live:   # not a stop until the server is gone: the next cell would land on its GPUs
                watcher.cancel()
                self._still_running(cell, still or f"{record.config} is {record.state}")
            try:
                await asyncio.wait_for(watcher, 30)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - the monitor's end is not the cell's verdict
                watcher.cancel()
        if record.state == "crashed" or any(lv.get("status") == "failed" for lv in cell.levels):
            # a level died and we stopped the server at once, or the process ended badly: its whole log
            # decides whether it crashed, and of what (a class already known is kept, with no read)
            try:
                await monitor.triage_after_stop()
            except HostError:
                pass
        crashed = record.crash_class is not None or (record.state == "crashed" and not record.kill_requested)
        if crashed:
            cell.crash_class = record.crash_class or "unknown"
            cell.crash_record = record.crash_record
            cell.status = "crashed" if cell.levels else "start-failed"
            if cell.levels:   # the visit counts up to where it crashed: its finished levels keep their samples
                from .samples import attach_samples

                attach_samples(self.profile.name, cell.run_id, cell.levels)
            if not cell.note:
                cell.note = f"{cell.crash_class}" + (f" (crash record {cell.crash_record})" if cell.crash_record else "")
        elif not ready:
            cell.status = "start-failed"
        elif self.stop_requested.is_set():
            cell.status, cell.note = "interrupted", "campaign stopped during this cell"
        elif not cell.levels:   # ready, yet the load generator measured no level: not a repeat of anything
            cell.status = "start-failed"
            cell.note = f"the sweep measured nothing: {cell.note}" if cell.note else "the sweep measured nothing"
        else:
            self._end_visit(cell, conditions, sweep_s)
        cell.ended_at = time.time()
        self._save()
        await self._gpus_idle(cell)
        done = f" (repeat {len(cell.rounds)} of {self.spec.sweep.repeats})" if cell.rounds else ""
        if cell.rounds and cell.rounds[-1].get("ended_why") and cell.status == "done":
            done = f" ({cell.rounds[-1]['ended_why']})"
        self._log(f"{cell.name}: {cell.status}{done}" + (f" · {cell.note}" if cell.note else ""))
        if self.stop_requested.is_set():
            raise CampaignStopped()

    def _infeasible(self, config: cfgs.ServerConfig) -> str | None:
        """Why the config cannot fit its GPUs' memory (console.campaign.feasible), unless told to try anyway."""
        from .feasible import check

        if self.spec.policy.try_infeasible:
            return None
        s = self.spec.sweep
        streams = max(s.levels + ([int(self.spec.slo.get("max_concurrency", 64))] if self.spec.slo else []))
        found, _why = check(self.profile, config, streams, s.input_len + s.output_len)
        return f"{found.text()} (set [policy] try_infeasible = true to launch anyway)" \
            if found is not None and not found.fits else None

    def _still_running(self, cell: st.Cell, why: str) -> None:
        """A server the campaign asked to stop still runs: the cell ends here and so does the campaign."""
        cell.status, cell.ended_at = "interrupted", time.time()
        cell.note = f"stop asked, still running: {why}"
        self._save_quietly()
        raise ServerStillRunning(f"{cell.name}: stop asked, still running: {why}; no further cell is launched "
                                 "onto its GPUs")

    async def _with_retries(self, step):
        """An SSH drop during a step: retried with backoff, then reported as the step's failure."""
        delay = 1.0
        for attempt in range(STEP_RETRIES):
            try:
                return await step()
            except HostError:
                if attempt == STEP_RETRIES - 1:
                    raise
                await asyncio.sleep(delay)
                delay = min(30.0, delay * 2)

    async def _script_for(self, cell: st.Cell) -> cfgs.ServerConfig:
        """The cell's launch config; for a grid cell, the derived script written beside the campaign."""
        configs = await cfgs.discover(self.session)
        base = cfgs.find(configs, cell.base)
        if base is None:
            raise LookupError(f"no launch config {cell.base!r} on {self.profile.name} "
                              "(see `gpudeck server list`)")
        if base.error:
            raise LookupError(f"{cell.base}: {base.error}")
        if not cell.flags:
            cell.script = base.script
            return base
        text = derive(base.text or "", cell.flags)
        private_dirs(st.inside(self.state.dir / "scripts", self.state.dir))
        write_atomic(st.script_file(self.state, cell.name), text, mode=0o600)   # replaces, never follows, a link
        remote = remote_script_path(base.script, self.state.id, cell.name)
        await write_remote_script(self.session.host, remote, text)
        cell.script = remote
        config = cfgs.ServerConfig(name=cell.name, script=remote, text=text)
        cfgs.parse_flags(config)
        return config

    async def _wait_ready(self, record, changed: asyncio.Event, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while record.state not in ("ready", "crashed", "stopped"):
            left = deadline - time.monotonic()
            if left <= 0 or self.stop_requested.is_set():
                return False
            changed.clear()
            await wait_at_most(changed.wait(), min(left, 1.0))
        return record.state == "ready"

    def _url_for(self, port: int | None) -> str:
        from urllib.parse import urlsplit, urlunsplit

        base = self.spec.sweep.url or self.profile.server.url
        if base is None:
            if port is None:
                raise LookupError("no URL: set [sweep] url, the profile's [server] url, or --port in the script")
            return f"http://127.0.0.1:{port}"
        if port is None:
            return base
        parts = urlsplit(base)
        return urlunsplit((parts.scheme, f"{parts.hostname}:{port}", parts.path, parts.query, parts.fragment))

    def _head_of(self, cell: st.Cell) -> str | None:
        """The head node of the job serving this cell, when the runner knows it (a Slurm lane does)."""
        return None

    async def _search_cell(self, cell: st.Cell, port: int | None) -> None:
        """The highest load under the [slo]: one level at a time on this server (console.campaign.slo_search)."""
        from .samples import attach_samples
        from .slo_search import parse, search

        slo = parse(self.spec.slo)
        assert slo is not None

        async def probe(c: int) -> dict | None:
            before = len(cell.levels)
            if self.stop_requested.is_set():
                return None
            await self._sweep_cell(cell, port, levels=[c])
            if len(cell.levels) == before:
                return None
            attach_samples(self.profile.name, cell.run_id, cell.levels[before:])
            return cell.levels[-1]

        found = await search(probe, slo)
        self._searched = found.to_json()
        self._log(f"{cell.name}: {slo.label()} held up to c={found.max_ok}"
                  + (f", failed at c={found.first_fail}" if found.first_fail else " (the cap)"))

    async def _sweep_cell(self, cell: st.Cell, port: int | None, levels: list[int] | None = None) -> None:
        from ..bench.process import SweepProcess
        from ..bench.route import route

        server_url, head = self._url_for(port), self._head_of(cell)
        found = await self._with_retries(lambda: route(self.session.host, self.profile.name,
                                                       self.backend, server_url, head))
        sweep = SweepProcess(bench_argv(self.spec, found.url, self.profile.name, found.tunnelled,
                                        found.server_port, found.server_url, levels))
        self._sweep = sweep
        await sweep.start()
        try:
            async for event in sweep.events():
                kind = event.get("event")
                if kind == "run-start":
                    cell.run_id = event.get("run_id")
                    self._save()
                elif kind == "tick":
                    cell.live = {"concurrency": event.get("concurrency"), "second": event.get("second"),
                                 "tok_s": event.get("output_tokens"), "completed": event.get("completed"),
                                 "failed": event.get("failed")}
                    if time.monotonic() - self._saved_live >= 1.0:   # at most one write a second
                        self._saved_live = time.monotonic()
                        self._save()
                elif kind == "level-end":
                    cell.live = None
                    summary = event.get("summary") or {}
                    cell.levels.append(level_row(summary) | {"energy": self._energy(summary)})
                    self._save()
                    row = cell.levels[-1]
                    tps = row["output_throughput"]
                    self._log(f"{cell.name}: c={row['concurrency']} {row['status']}"
                              + (f" {tps:.2f} tok/s" if tps is not None else ""))
                elif kind == "error" and not cell.note:
                    cell.note = str(event.get("message", ""))[:300]
            code, tail = await sweep.finish()
            if code not in (0, 3) and not cell.levels:
                cell.note = cell.note or f"the load generator exited {code}: {tail[-300:]}"
        finally:
            self._sweep = None
            cell.live = None
            await sweep.close()

    @staticmethod
    def _energy(summary: dict) -> dict:
        """One level's tokens per joule and average power, as the load generator's one GPU sampler measured
        them over the level (console.bench.gpu_watch); unknown with its reason when it sampled none."""
        from ..bench.energy import level_energy

        energy = summary.get("energy")
        return energy if isinstance(energy, dict) else level_energy(None, 0.0, 0.0, None, False)

    async def _gpus_idle(self, cell: st.Cell) -> None:
        """After a stop: wait for GPU memory to come back to idle; name what still holds it."""
        from ..gpus import sample_once
        from ..servers.procs import gpu_holders

        policy = self.spec.policy
        deadline = time.monotonic() + policy.gpu_idle_timeout_s
        while True:
            snap = await sample_once(self.session.host, smi_command=self.profile.gpu.smi_command or None,
                                     simulated=self.profile.ui.simulated)
            if snap.state != "ok":
                add_note(cell, f"GPU check skipped: {snap.state} ({snap.message})")
                self._save()
                return
            busy = [g for g in snap.gpus if isinstance(g.memory_used_mib, (int, float))
                    and g.memory_used_mib > policy.gpu_idle_mib]
            if not busy:
                return
            if time.monotonic() > deadline:
                holders = await gpu_holders(self.session.host) or []
                who = ", ".join(f"pid {h.pid} ({h.used_mib} MiB)" for h in holders) or "no process listed"
                raise RuntimeError(f"GPU memory did not return to idle within {policy.gpu_idle_timeout_s:g} s "
                                   f"after {cell.name}: {len(busy)} GPU(s) busy; held by {who}. "
                                   "The next config would start on busy GPUs, so the campaign stops here")
            await asyncio.sleep(2.0)

    def _meets_slo(self, cell: st.Cell) -> bool:
        slo = self.spec.sweep.slo
        levels = [lv for r in cell.rounds for lv in r.get("levels") or []]
        if not slo or cell.status != "done" or not levels:
            return False
        from .compare import meets_slo

        return all(level["status"] == "ok" and meets_slo(level, slo) for level in levels)
