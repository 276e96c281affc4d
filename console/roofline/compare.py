"""The roofline beside the measurements: the headline sentence and one row per batch level."""
from __future__ import annotations

from dataclasses import dataclass

from ..fmt import UNKNOWN
from .result import Roofline
from .runs import MeasuredRun


@dataclass(frozen=True)
class Row:
    batch: int
    ideal_tok_s: float
    realistic_tok_s: float
    measured_tok_s: float | None    # None: no measurement at this concurrency
    measured_status: str | None
    efficiency_pct: float | None
    bound: str
    fitted_tok_s: float | None = None  # what the sweep's calibration predicts here; None without one


@dataclass(frozen=True)
class Headline:
    measured_tok_s: float | None
    ideal_tok_s: float
    realistic_tok_s: float
    efficiency_pct: float | None
    efficiency_realistic_pct: float | None
    run_name: str | None

    @property
    def sentence(self) -> str:
        if self.measured_tok_s is None:
            return (f"single stream: no measured run yet · ideal {self.ideal_tok_s:.0f} tok/s · "
                    f"realistic {self.realistic_tok_s:.0f} tok/s")
        return (f"single stream: {self.measured_tok_s:.2f} / {self.ideal_tok_s:.0f} tok/s = "
                f"{self.efficiency_pct:.1f}% of the ideal roofline · realistic bound "
                f"{self.realistic_tok_s:.0f} tok/s → {self.efficiency_realistic_pct:.1f}%")


def calibration_text(roof: Roofline, run: MeasuredRun | None) -> tuple[object, str]:
    """(Calibration or None, the line the Roofline tab shows about it): a line that misses its own
    points is "no fit" with the reason, never an explanation."""
    from .calibrate import calibrate, dominant_term

    if run is None:
        return None, "calibration: N/A (no finished sweep yet)"
    outcome = calibrate(roof, run.tpot_points())
    cal = outcome.calibration
    if cal is None and outcome.tried is None:
        return None, f"calibration: N/A (run {run.name} has fewer than two finished levels with a TPOT)"
    if cal is None:
        return None, f"calibration from {run.name}: no fit ({outcome.reason})"
    eta = f"{cal.eta:.1%}" if cal.eta else UNKNOWN
    r2 = f"{cal.r2:.3f}" if cal.r2 is not None else UNKNOWN
    line = (f"calibration from {run.name}: η {eta} of the ideal bandwidth · overhead {cal.overhead_s * 1e3:.2f} ms/step · "
            f"r² {r2} · levels {','.join(str(b) for b in cal.levels_used)}\n{dominant_term(roof, cal, 1)}")
    unmeasured = [b for b in sorted({lv.batch for lv in roof.levels} | {lv.concurrency for lv in run.levels})
                  if run.tok_s_at(b) is None]
    if unmeasured:
        b = unmeasured[-1]
        line += (f"; at this η and {cal.overhead_s * 1e3:.0f} ms/step, {b} streams would give ~{cal.tok_s(roof, b):,.0f} tok/s "
                 f"(ideal {roof.at(b).tok_s_ideal:,.0f})")
    return cal, line


def headline(roof: Roofline, run: MeasuredRun | None) -> Headline:
    measured = run.tok_s_at(1) if run else None
    eff = roof.efficiency(measured, 1) if measured else None
    return Headline(measured, roof.single_stream_ideal, roof.single_stream_realistic,
                    eff.efficiency_pct if eff else None, eff.efficiency_realistic_pct if eff else None,
                    run.name if run else None)


def rows(roof: Roofline, run: MeasuredRun | None, cal=None) -> list[Row]:
    """Every roofline level plus every measured concurrency, in batch order (with predictions when calibrated)."""
    batches = {lv.batch for lv in roof.levels}
    statuses: dict[int, str] = {}
    if run:
        for lv in run.levels:
            batches.add(lv.concurrency)
            statuses[lv.concurrency] = lv.status
    out = []
    for b in sorted(batches):
        costs = roof.at(b)
        measured = run.tok_s_at(b) if run else None
        out.append(Row(b, costs.tok_s_ideal, costs.tok_s_realistic, measured, statuses.get(b),
                       100.0 * measured / costs.tok_s_ideal if measured else None, costs.bound_detail,
                       cal.tok_s(roof, b) if cal is not None else None))
    return out
