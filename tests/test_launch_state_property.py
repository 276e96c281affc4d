"""A launch's state machine under random event sequences (console/servers/launch_state.py).

Whatever order events arrive in (a stop racing a crash, a ready after the end, a requeue, a stop
another process saved), every record on disk was written by a transition the table allows
(console/README.md, "A launch's states"), an event the state does not allow changes nothing, an
ended launch never comes back to life, and the record's file, `server status --json`'s row, the
report's `Last state` and the Server tab's badge all say the same state.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import replace

from hypothesis import HealthCheck, given, settings, strategies as st

from console.servers import launch_state as ls
from console.store.launches import LaunchRecord, LaunchState as S

LIVE = {S.LAUNCHING, S.LOADING, S.READY, S.STOPPING}
ENDED = {S.STOPPED, S.CRASHED}
# the transitions table of console/README.md: (from, to) pairs a saved record may show
EDGES = ({(S.LAUNCHING, S.LOADING), (S.LAUNCHING, S.CRASHED), (S.LOADING, S.READY),
          (S.LOADING, S.LAUNCHING), (S.READY, S.LAUNCHING), (S.STOPPING, S.READY), (S.STOPPING, S.LOADING),
          (S.STOPPED, S.CRASHED)}
         | {(a, S.STOPPING) for a in LIVE} | {(a, b) for a in LIVE for b in ENDED})
SCHEDULER = ("timeout", "node-fail", "out-of-memory", "preempted", "cancelled")

statuses = st.sampled_from([None, 0, 1, 2, 134, 137, 139, 143, -11])
events = st.one_of(
    st.builds(ls.Started, how=st.just("group")),
    st.builds(ls.StartFailed, why=st.just("wrapper")),
    st.builds(ls.Requeued, restarts=st.integers(1, 3)),
    st.builds(ls.Ready, how=st.sampled_from(["log", "/health"])),
    st.builds(ls.StopAsked, by=st.sampled_from(["console", "campaign"])),
    st.builds(ls.StopRefused, why=st.just("not ours")),
    st.builds(ls.Ended, exit_status=statuses, engine_died=st.sampled_from([None, "Worker proc died unexpectedly"]),
              scheduler_state=st.sampled_from([None, "COMPLETED", "FAILED", "TIMEOUT"]),
              scheduler_class=st.sampled_from([None, *SCHEDULER])),
    st.builds(ls.EngineDied, line=st.just("engine core exited unexpectedly")),
    st.builds(ls.CrashFound, cls=st.sampled_from(["cuda-illegal-address", "hang", "oom", "segfault"]),
              crash_record=st.sampled_from([None, "c1"])),
    st.sampled_from([S.STOPPING, S.STOPPED]).map(lambda state: "elsewhere:" + state),
)


def _views(profile: str, record_id: str) -> dict[str, str]:
    """The state each view shows for the launch, read from disk as each view reads it."""
    from console.report.document import _configs_from_records
    from console.store import launches
    from screens.server_pane import STATE_BADGE, state_badge

    saved = launches.get(profile, record_id)
    assert saved is not None
    status_row = saved.to_json()   # what `server status --json` lists for it
    badge, _ = state_badge(saved)
    tab = next(state for state, (text, _) in STATE_BADGE.items() if badge.startswith(text))
    report = {c["name"]: c["state"] for c in _configs_from_records(profile)}[saved.config]
    return {"record": saved.shown_state, "status": status_row["shown_state"], "report": report, "tab": tab}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events, min_size=1, max_size=14))
def test_every_saved_state_came_from_an_allowed_transition_and_every_view_agrees(sequence):
    from console.store import launches

    with tempfile.TemporaryDirectory() as home:
        before_home = os.environ.get("GPUDECK_HOME")
        os.environ["GPUDECK_HOME"] = home
        try:
            record = ls.create("p", "c-1", lambda i: LaunchRecord(id=i, config="c", script=None, log=None,
                                                                  exit_file=None, pgid=7, pid=7))
            saved = launches.get("p", record.id)
            assert saved is not None and saved.state == S.LAUNCHING
            ended_once = False
            for event in sequence:
                if isinstance(event, str):   # another process saved a stop of this launch
                    state = S(event.removeprefix("elsewhere:"))
                    event = ls.StopSeenElsewhere(replace(record, state=state, kill_requested=True,
                                                         exit_status=0 if state == S.STOPPED else None))
                allowed = ls.allowed(record, event)
                changed = ls.move("p", record, event)
                after = launches.get("p", record.id)
                assert after is not None
                if not allowed:
                    assert not changed and after == saved   # refused: nothing changed, nothing written
                if changed:
                    assert after == record   # the file is what the transition made
                    assert saved.state == after.state or (saved.state, after.state) in EDGES, (saved.state, event)
                if saved.state in ENDED:
                    ended_once = True
                if ended_once:
                    assert after.state in ENDED, f"an ended launch came back as {after.state} after {event}"
                if (isinstance(event, ls.Ended) and allowed and record.kill_requested and not record.crash_class
                        and event.scheduler_class is None):
                    assert after.state == S.STOPPED   # a stop asked for is never a crash by itself
                if after.state in ENDED and after.crash_class is not None:
                    assert after.state == S.CRASHED   # a crash judged before the end is how it ended
                views = _views("p", record.id)
                assert len(set(views.values())) == 1, views
                saved = after
        finally:
            if before_home is None:
                os.environ.pop("GPUDECK_HOME", None)
            else:
                os.environ["GPUDECK_HOME"] = before_home
