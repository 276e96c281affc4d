"""Tokens per joule: the power of the GPUs the server holds, integrated over a level; unknown, never 0."""
from __future__ import annotations

import pytest

from console.bench.energy import PowerTrace, level_energy
from console.gpus.model import GPU, Snapshot


def _snap(watts: list, used_mib: list, state: str = "ok") -> Snapshot:
    return Snapshot(state=state, gpus=[GPU(index=i, power_draw_w=w, memory_used_mib=m)
                                       for i, (w, m) in enumerate(zip(watts, used_mib))])


def test_a_level_integrates_the_power_of_the_gpus_holding_memory_only():
    trace = PowerTrace(idle_mib=1024)
    for t in range(11):            # two GPUs serve at 300 W and 500 W, an idle third draws 40 W (not counted)
        trace.add(100.0 + t, _snap([300.0, 500.0, 40.0], [80_000, 80_000, 10]))
    out = level_energy(trace, 100.0, 110.0, output_tokens=4000, simulated=False)
    assert out["joules"] == pytest.approx(8000.0) and out["avg_power_w"] == pytest.approx(800.0)
    assert out["tok_per_j"] == pytest.approx(0.5) and out["gpus"] == 2 and out["source"] == "measured"
    assert level_energy(trace, 100.0, 110.0, 4000, simulated=True)["source"] == "SIMULATED"


def test_a_ramp_is_integrated_as_trapezoids_and_the_edges_hold_the_nearest_sample():
    trace = PowerTrace()
    for t, w in ((1.0, 100.0), (2.0, 300.0), (3.0, 300.0)):
        trace.add(t, _snap([w], [50_000]))
    joules, samples = trace.integrate(0.5, 3.5)
    assert samples == 3 and joules == pytest.approx(0.5 * 100 + 200 + 300 + 0.5 * 300)


@pytest.mark.parametrize("snap, why", [(_snap([], [], state="no-driver"), "no GPU sample (no-driver)"),
                                       (_snap(["N/A"], [50_000]), "a GPU's power reads N/A"),
                                       (_snap([200.0], [5]), "no GPU holds the server")])
def test_unknown_power_is_unknown_with_why_never_zero(snap, why):
    trace = PowerTrace()
    for t in range(5):
        trace.add(float(t), snap)
    out = level_energy(trace, 0.0, 4.0, 1000, simulated=False)
    assert out["tok_per_j"] is None and out["avg_power_w"] is None and out["why"] == why


def test_too_few_samples_in_a_level_is_unknown():
    trace = PowerTrace()
    trace.add(0.0, _snap([200.0], [50_000]))
    assert level_energy(trace, 0.0, 0.5, 100, simulated=False)["tok_per_j"] is None
