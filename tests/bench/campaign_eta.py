"""How close a campaign's time left comes to the truth: the demo's own campaign, run to its end.

    .venv/bin/python tests/bench/campaign_eta.py [--efficiency 0.3] [--startup-s 0.3]

The estimate (console.campaign.owner's reading, as every view shows it) is
taken at each save of the running campaign; at a quarter, half and three
quarters of the runs done it is set against the time the campaign really had
left, measured at its end. The goal is within 25% at each quarter. Visit times
follow the machine's load, so the load average is printed with the figures: a
figure taken while the load changed a lot says more about the machine than
about the estimate.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.bench._alternate import load_average  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--efficiency", default="0.3", help="the simulator's efficiency (0.3: ten times faster)")
    ap.add_argument("--startup-s", default="0.3", help="the simulated servers' start time")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="gpudeck-eta-"))
    os.environ.update(GPUDECK_SIM_STARTUP_S=args.startup_s, GPUDECK_SIM_EFFICIENCY=args.efficiency,
                      GPUDECK_HOME=str(scratch / "unused"))
    from console import demo
    from console.campaign import control, owner
    from console.campaign.parallel import runner_for
    from console.store import campaigns as st
    from profiles import store

    world = demo.setup(scratch / "demo")
    readings: list[tuple[float, owner.Reading]] = []
    save = st.save

    def saved(state: st.CampaignState) -> None:   # every progress event is a save of the state
        save(state)
        if state.status == "running":
            now = time.time()
            readings.append((now, owner.read(state, now=now, alive=True)))   # this process is its driver
    st.save = saved
    try:
        print(f"load average at the start: {load_average()}")
        state = control.create("demo")
        final = asyncio.run(runner_for(state, store.load("demo")).run())
    finally:
        st.save = save
        world.close()
    if final.finished_at is None:
        print(f"the campaign ended {final.status} without a finish time: nothing to measure")
        return 1
    worst = 0.0
    for quarter in (0.25, 0.5, 0.75):
        found = next(((at, r) for at, r in readings
                      if r.progress.fraction is not None and r.progress.fraction >= quarter), None)
        if found is None or found[1].time_left is None:
            print(f"{quarter:.0%}: no estimate")
            worst = float("inf")
            continue
        at, seen = found
        actual = final.finished_at - at
        off = seen.time_left.seconds / actual - 1
        worst = max(worst, abs(off))
        print(f"{quarter:.0%} ({seen.progress.runs_done}/{seen.progress.runs_planned} runs): estimate "
              f"{seen.time_left.seconds:.0f} s ({seen.time_left.low:.0f}-{seen.time_left.high:.0f}), "
              f"actual {actual:.0f} s, {off:+.0%}")
    print(f"load average at the end: {load_average()}")
    print(f"worst quarter: {worst:.0%} off (goal: within 25%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
