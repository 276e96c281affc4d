"""What a host runtime tells whoever listens: typed events, one class per kind of fact.

The App forwards each one to the panes as a Textual message; the CLI and
tests subscribe to a runtime directly. Every event names its profile, so a
listener that shows one host ignores the others' events by a field check.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RuntimeEvent:
    profile: str


@dataclass(frozen=True)
class GPUsSampled(RuntimeEvent):
    snapshot: Any  # console.gpus.Snapshot


@dataclass(frozen=True)
class ServerStateChanged(RuntimeEvent):
    record: Any  # console.store.launches.LaunchRecord


@dataclass(frozen=True)
class ServerLogLines(RuntimeEvent):
    record_id: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class ServerMetricsSampled(RuntimeEvent):
    """One poll of a live launch's own `/metrics` (runtime/metrics_poll.py).

    `metrics` is the last good reading (console.servers.live_metrics.LiveMetrics; None: none
    yet) and `taken_at` when it was read; `stale` is True when this poll got no reading or
    the server has ended (`error` says why). A reading older than `stale_after_s` is stale
    too, even if no event says so (the poller itself may be what stopped)."""

    record_id: str
    config: str
    metrics: Any
    taken_at: float | None
    polled_at: float
    stale: bool
    error: str | None = None
    stale_after_s: float = 5.0


@dataclass(frozen=True)
class CrashRecorded(RuntimeEvent):
    crash: Any  # console.store.crashes.CrashRecord


@dataclass(frozen=True)
class SweepProgress(RuntimeEvent):
    view: Any  # console.bench.live.SweepView (the runtime's own, redrawn by the reader)
    running: bool
    error: str | None = None


@dataclass(frozen=True)
class RunSaved(RuntimeEvent):
    run_id: str


@dataclass(frozen=True)
class TasksChanged(RuntimeEvent):
    pass


@dataclass(frozen=True)
class HostConnection(RuntimeEvent):
    """The host's link: `reachable` False while it is down; `last_good` is the time of the
    last successful contact (what every pane marks its data with while stale)."""

    state: str
    reachable: bool
    since: float
    last_good: float | None
    error: str | None = None


@dataclass(frozen=True)
class CampaignChanged(RuntimeEvent):
    """The profile's latest campaign (None: none yet) with its owner's reading
    (`console.campaign.owner.Reading`: driver, progress, elapsed, time left; None with no campaign)."""

    state: Any = None
    view: Any = None


@dataclass(frozen=True)
class StoreProblems(RuntimeEvent):
    """Records that could not be read, each named once per console."""

    lines: tuple[str, ...] = field(default_factory=tuple)
