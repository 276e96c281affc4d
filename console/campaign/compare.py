"""The campaign's answer: per config the best numbers per level, the crashes, and the winner under the SLOs."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..store.runs import LevelResult
from .state import CampaignState, Cell


@dataclass
class ConfigResult:
    cell: str
    status: str
    flags: dict
    levels: list[dict]
    crash_class: str | None
    note: str
    best_tps: float | None = None          # the best output tok/s of any level that finished ok
    best_level: int | None = None
    best_within_slo: float | None = None   # the best output tok/s of a level that met every SLO
    best_within_slo_level: int | None = None
    efficiency_pct: float | None = None    # best_tps against the roofline's ideal at that batch
    calibration: dict | None = None        # eta and per-step overhead fitted to this cell's TPOTs

    def to_json(self) -> dict:
        return dict(self.__dict__)


# Two configs closer than this are within one sweep's run-to-run noise: a tie, not a winner.
TIE_PCT = 1.0


@dataclass
class Comparison:
    results: list[ConfigResult] = field(default_factory=list)
    roofline_note: str = ""                # why efficiency is N/A, when it is
    winner: str | None = None              # the best config (with `tie`, only the first of the tied)
    winner_tps: float | None = None
    runner_up: str | None = None
    runner_up_tps: float | None = None
    margin_pct: float | None = None        # how much the winner beats the runner-up
    tied: list[str] = field(default_factory=list)  # every config within TIE_PCT of the best, best first
    lowest_tied_tps: float | None = None
    basis: str = ""                        # what the winner was chosen on

    @property
    def tie(self) -> bool:
        """Two or more configs are within TIE_PCT of the best: none is named the winner."""
        return len(self.tied) > 1

    def verdict(self) -> tuple[str, str, str]:
        """The answer as (label, names, rest), for the CLI table and the Campaign tab alike:
        ("winner: ", "a", " at 31.50 tok/s, +12.0% over b (basis)"), a tie, or no winner yet."""
        if not self.winner:
            return "no winner yet", "", f" ({self.basis})"
        if self.tie:
            names = ", ".join(self.tied[:-1]) + f" and {self.tied[-1]}"
            return ("tie: ", names, f" within {TIE_PCT:g}% ({self.winner_tps:.2f} to {self.lowest_tied_tps:.2f} "
                                    f"tok/s), no clear best ({self.basis})")
        margin = f", {self.margin_pct:+.1f}% over {self.runner_up}" if self.margin_pct is not None else ""
        return "winner: ", self.winner, f" at {self.winner_tps:.2f} tok/s{margin} ({self.basis})"

    def to_json(self) -> dict:
        return {"results": [r.to_json() for r in self.results], "winner": self.winner, "winner_tps": self.winner_tps,
                "runner_up": self.runner_up, "runner_up_tps": self.runner_up_tps, "margin_pct": self.margin_pct,
                "tie": self.tie, "tied": list(self.tied), "basis": self.basis, "roofline_note": self.roofline_note}


def meets_slo(level: dict, slo: dict) -> bool:
    """A level's p99 TTFT and TPOT within the SLOs given (an unmeasured figure never meets one)."""
    for key, field_ in (("ttft_ms", "ttft_p99"), ("tpot_ms", "tpot_p99")):
        limit = slo.get(key)
        if limit is not None and (level.get(field_) is None or level[field_] > limit):
            return False
    return True


def result_of(cell: Cell, slo: dict) -> ConfigResult:
    out = ConfigResult(cell=cell.name, status=cell.status, flags=dict(cell.flags), levels=list(cell.levels),
                       crash_class=cell.crash_class, note=cell.note)
    for level in cell.levels:
        tps = LevelResult.from_doc(level).measured_tok_s   # the store's one rule for a measured level
        if tps is None:
            continue
        if out.best_tps is None or tps > out.best_tps:
            out.best_tps, out.best_level = tps, level.get("concurrency")
        if slo and meets_slo(level, slo) and (out.best_within_slo is None or tps > out.best_within_slo):
            out.best_within_slo, out.best_within_slo_level = tps, level.get("concurrency")
    return out


def roofline_for(profile) -> tuple[object | None, str]:
    """The profile's roofline, or why there is none (efficiency then stays N/A)."""
    from ..roofline.errors import RooflineError
    from ..roofline.from_profile import compute_inputs, inputs_from_profile

    try:
        return compute_inputs(inputs_from_profile(profile)), ""
    except (RooflineError, OSError, ValueError, KeyError) as exc:
        return None, f"efficiency N/A: {exc}"


def _against_roofline(result: ConfigResult, roof) -> None:
    from ..roofline.calibrate import fit

    if result.best_tps is not None and result.best_level:
        ideal = roof.tok_s(result.best_level, "ideal")
        result.efficiency_pct = round(100 * result.best_tps / ideal, 2) if ideal else None
    points = [(lv["concurrency"], lv["tpot_p50"] / 1000) for lv in result.levels
              if lv.get("status") == "ok" and lv.get("tpot_p50") and lv.get("concurrency")]
    cal = fit(roof, points)
    result.calibration = cal.to_json() if cal is not None else None


def compare(state: CampaignState, roof=None, roof_note: str = "") -> Comparison:
    slo = (state.spec.get("sweep") or {}).get("slo") or {}
    results = [result_of(c, slo) for c in state.cells]
    if roof is not None:
        for r in results:
            _against_roofline(r, roof)
    key = "best_within_slo" if slo else "best_tps"
    ranked = sorted((r for r in results if getattr(r, key) is not None), key=lambda r: getattr(r, key), reverse=True)
    comp = Comparison(results=results, basis="best output tok/s at a level meeting every SLO (p99)" if slo
                      else "best output tok/s at any level that finished ok (no SLO given)",
                      roofline_note=roof_note)
    if ranked:
        comp.winner, comp.winner_tps = ranked[0].cell, getattr(ranked[0], key)
        if len(ranked) > 1:
            second = getattr(ranked[1], key)
            comp.runner_up, comp.runner_up_tps = ranked[1].cell, second
            comp.margin_pct = round((comp.winner_tps / second - 1) * 100, 1) if second else None
        close = [r for r in ranked if getattr(r, key) * (1 + TIE_PCT / 100) > comp.winner_tps]
        if len(close) > 1:
            comp.tied, comp.lowest_tied_tps = [r.cell for r in close], getattr(close[-1], key)
    return comp


def _n(value, fmt="{:.2f}") -> str:
    return "N/A" if value is None else fmt.format(value)


def table_lines(state: CampaignState, roof=None, roof_note: str = "") -> list[str]:
    """The campaign's result table, as `campaign show` prints it."""
    comp = compare(state, roof, roof_note)
    levels = (state.spec.get("sweep") or {}).get("levels") or []
    lines = [f"{state.id} · profile {state.profile} · {state.status}" + (f" · {state.note}" if state.note else "")]
    head = f"{'config':<44} {'state':<13} " + " ".join(f"{'c=' + str(c):>9}" for c in levels) + "  crash / note"
    lines += ["output tok/s per level (TTFT/TPOT p99 ms below)", head]
    for r in comp.results:
        by_c = {lv.get("concurrency"): lv for lv in r.levels}
        cells, lat = [], []
        for c in levels:
            lv = by_c.get(c)
            if lv is None:
                cells.append(f"{'·' if r.status == 'queued' else 'N/A':>9}")
                lat.append(f"{'':>9}")
            elif lv.get("status") == "ok":
                cells.append(f"{_n(lv.get('output_throughput')):>9}")
                lat.append(f"{_n(lv.get('ttft_p99'), '{:.0f}') + '/' + _n(lv.get('tpot_p99'), '{:.0f}'):>9}")
            else:
                cells.append(f"{'✖ ' + str(lv.get('status')):>9}")
                lat.append(f"{'':>9}")
        name = r.cell if len(r.cell) <= 44 else r.cell[:43] + "…"
        why = r.crash_class or r.note
        lines.append(f"{name:<44} {r.status:<13} " + " ".join(cells) + (f"  {why}" if why else ""))
        lines.append(f"{'':<44} {'':<13} " + " ".join(lat))
    if roof is not None:
        lines.append("against the roofline (best level; fit of TPOT = ideal step / eta + overhead):")
        for r in comp.results:
            cal = r.calibration or {}
            eta = f"eta {cal['eta'] * 100:.1f}%" if cal.get("eta") else "eta N/A"
            over = f"overhead {cal['overhead_ms']:.1f} ms/step" if cal else "overhead N/A"
            eff = f"{r.efficiency_pct:.2f}%" if r.efficiency_pct is not None else "N/A"
            lines.append(f"  {r.cell[:44]:<44} efficiency {eff} at c={r.best_level or 'N/A'} · {eta} · {over}")
    elif comp.roofline_note:
        lines.append(comp.roofline_note)
    lines.append("".join(comp.verdict()))
    return lines
