"""A campaign's table says why a config has no efficiency/overhead fit, instead of two bare N/As."""
from __future__ import annotations

from console.campaign.compare import Comparison, ConfigResult, _against_roofline, efficiency_lines


class _Roof:
    """A roofline whose ideal step grows with the batch: enough for the fit and the efficiency."""
    def step_time_s(self, batch: int, which: str) -> float:
        return 0.01 + 0.001 * batch

    def tok_s(self, level: int, which: str) -> float:
        return level / self.step_time_s(level, which)


def _result(levels: list[tuple[int, float]]) -> ConfigResult:
    rows = [{"concurrency": c, "finished": True, "output_throughput": 10.0 * c, "tpot_p50": tpot}
            for c, tpot in levels]
    return ConfigResult(cell="cfg", status="done", flags={}, levels=rows, crash_class=None, note="", best_level=levels[-1][0],
                        deciding_level=levels[-1][0])


def test_a_refused_fit_carries_its_reason_into_the_table():
    one = _result([(8, 20.0)])
    _against_roofline(one, _Roof())
    assert one.calibration is None and "fewer than two finished levels" in one.calibration_refused
    line = efficiency_lines(Comparison(results=[one]))[1]
    assert "fewer than two finished levels" in line and "N/A" not in line.split("·", 1)[1]
    assert one.to_json()["calibration_refused"] == one.calibration_refused


def test_a_fit_that_meets_its_levels_is_shown_with_no_refusal():
    good = _result([(1, 11.0), (8, 18.0), (32, 42.0)])   # TPOT = ideal step + 0 overhead, in ms
    _against_roofline(good, _Roof())
    assert good.calibration is not None and good.calibration_refused is None
    assert "eta " in efficiency_lines(Comparison(results=[good]))[1]
