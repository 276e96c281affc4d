"""One sweep run to its end in the load generator's own process.

`gpudeck bench` runs here, and so does every sweep the Bench tab or a campaign
starts (they run `gpudeck bench --events` as a child). What a run's end means
is decided here once: a server that never answered is `not started` (exit 4,
its run file dropped); an I/O error or a bug of the sweep's is `error` (exit
1, the levels saved before it kept); otherwise the levels' statuses decide (0
all ok, 3 not). The first SIGINT, SIGTERM or SIGHUP stops the sweep (what was
measured is saved); a second one exits at once. Every end is one `run-end`
event, and server text in a message is redacted of the request headers.
"""
from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass
from typing import Callable

from . import events
from .route import NotRun, route_for_profile


@dataclass
class SweepEnd:
    code: int                  # 0 every level ok, 3 some not, 4 not started, 1 an error
    doc: dict | None = None    # the run document, when the sweep ran
    message: str | None = None  # why it did not start or why it stopped
    status: str = "error"      # the run's status, "not started" or "error"
    url: str = ""              # the server's URL as the operator knows it (never a tunnel's end)


async def run_sweep(config, emit: Callable[[dict], None] = events.discard,
                    announce: Callable[[str, str], None] | None = None, suggest: bool = True) -> SweepEnd:
    """Run `config` (a checked BenchConfig) to its end. `announce(run_id, url)` is called once the
    run file exists, before the first request; `suggest` offers a task when efficiency is low."""
    found, host = await route_for_profile(config.profile, config.url) if not config.tunnelled else (None, None)
    if found is not None and found.tunnelled:
        config.server_url = config.server_url or found.server_url
        config.server_port = config.server_port or found.server_port
        config.url, config.tunnelled = found.url, True
    try:
        return await _run(config, emit, announce, suggest, host)
    finally:
        if host is not None:
            await host.close()


async def _run(config, emit, announce, suggest: bool, host) -> SweepEnd:
    from .redact import Redactor
    from .results import RunStore
    from .runner import NotStarted, Sweep, exit_code

    try:
        store = RunStore(config.profile)
    except OSError as exc:
        raise NotRun(f"cannot create the run files: {exc.strerror or exc} ({exc.filename or ''})") from None
    link = None
    if config.tunnelled:  # through an SSH tunnel: tell a lost link from a dead server
        from .linkcheck import for_sweep

        link = await for_sweep(config.url, config.profile, config.server_port, host=host)
    redactor = Redactor(config.headers)
    store.redact = redactor.text
    sweep = Sweep(config, emit=emit, store=store, link=link)
    gpu_host = None
    if config.gpu_sample:   # one sampler for the sweep: energy and the timeline's gpu series both read it
        from .gpu_watch import for_profile

        sweep.gpu, gpu_host = for_profile(config.profile, sweep.timeline, host, config.gpu_idle_mib)
    _stop_on_signals(sweep)
    shown = config.server_url or config.url
    if announce is not None:
        announce(store.run_id, shown)
    try:
        doc = await sweep.run()
    except NotStarted as exc:
        store.discard()
        reason = redactor.text(str(exc))
        emit(events.make("error", level=None, message=f"not started: {reason}"))
        emit(events.make("run-end", status="not started", exit_code=4, path=None))
        return SweepEnd(4, None, reason, "not started", shown)
    except Exception as exc:  # noqa: BLE001 - an I/O error or the sweep's own bug: one line, saved state kept
        unsaved = store.drop_if_unsaved()
        if isinstance(exc, OSError) and not isinstance(exc, ConnectionError):   # a full disk, say
            where = "nothing was saved" if unsaved else f"{store.path} keeps the levels saved before"
            message = f"cannot save the run: {exc.strerror or exc} ({where})"
        else:
            message = redactor.text(f"{type(exc).__name__}: {exc}")
        emit(events.make("error", level=None, message=message))
        emit(events.make("run-end", status="error", exit_code=1, path=None if unsaved else str(store.path)))
        return SweepEnd(1, None, message, "error", shown)
    finally:
        store.drop_if_unsaved()
        if link is not None:
            await link.close()
        if gpu_host is not None:
            await gpu_host.close()
    code = exit_code(doc)
    if suggest:
        _judge_efficiency(config.profile, store.run_id, doc)
    emit(events.make("run-end", status=doc["status"], exit_code=code, path=doc.get("path")))
    return SweepEnd(code, doc, None, doc["status"], shown)


def _stop_on_signals(sweep) -> None:
    """The first signal stops the sweep (what was measured is saved); a second one exits now."""
    loop = asyncio.get_running_loop()
    seen = {"n": 0}

    def on_signal(sig: int) -> None:
        seen["n"] += 1
        if seen["n"] > 1:
            os._exit(128 + sig)
        sweep.stop()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, on_signal, sig)


def _judge_efficiency(profile_name: str, run_id: str, doc: dict) -> None:
    """The saved run's efficiency against the roofline: one suggestion on the task board if it is low."""
    try:
        from profiles import store

        from ..report import offer_run_efficiency

        offer_run_efficiency(store.load(profile_name), run_id, doc)
    except Exception:  # noqa: BLE001 - a suggestion is a courtesy; it never fails a finished sweep
        pass
