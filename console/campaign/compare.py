"""The campaign's answer: per config each level's mean and 95% CI, the crashes, and a winner only beyond the noise.

A config wins only where the 95% interval of its difference from the runner-up
lies wholly above zero and above `[policy] min_effect` (default 2%); else the
answer says the two can't be told apart, with the difference and its interval.
Until the campaign is finished the leader is "leading so far", never a winner;
a stopped campaign says it is incomplete. A config is compared only at levels
it finished in every repeat, so one that crashed at 256 streams is no winner
or tie there. (The statistics are in `stats`, the frontier in `pareto`.)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..fmt import UNKNOWN
from ..store.runs import LevelResult
from . import stats
from .conditions import spread_note
from .validity import invalid_repeats
from ..store.campaigns import CampaignState, Cell

MIN_EFFECT_PCT = 2.0       # the smallest difference worth naming a winner, unless [policy] min_effect says


@dataclass
class ConfigResult:
    cell: str
    status: str
    flags: dict
    levels: list[dict]                     # per level: mean and CI of every metric, over the repeats it finished
    crash_class: str | None
    note: str
    repeats: int = 0                       # repeats measured (a pruned or crashed config has fewer)
    crashed_at: int | None = None          # the first level that failed, in any repeat
    best_tps: float | None = None          # the best mean output tok/s of any level finished in every repeat
    best_level: int | None = None
    best_ci: list | None = None
    best_within_slo: float | None = None   # the same, over levels whose mean p99s meet every SLO
    best_within_slo_level: int | None = None
    deciding_level: int | None = None      # where this config was compared (within the SLOs when given)
    efficiency_pct: float | None = None    # at best_level, against the roofline's ideal there
    efficiency_deciding_pct: float | None = None   # at deciding_level
    calibration: dict | None = None        # eta and per-step overhead fitted to this cell's TPOTs
    calibration_refused: str | None = None  # why no line was fitted ("no fit" and its reason), when none was
    max_load: dict | None = None           # the highest concurrency within the [slo], over its visits (slo_search)
    ended_by: str | None = None            # what ended its repeats: precision, max_repeats or repeats (until_sure)
    ended_why: str = ""
    stats: dict = field(default_factory=dict, repr=False)   # concurrency -> stats.LevelStats

    def to_json(self) -> dict:
        doc = {k: v for k, v in self.__dict__.items() if k != "stats"}
        return doc

    def repeats_at(self, level: int | None) -> tuple:
        return self.stats[level].repeats if level in self.stats else ()


@dataclass
class Comparison:
    results: list[ConfigResult] = field(default_factory=list)
    roofline_note: str = ""                # why efficiency is N/A, when it is
    phase: str = "running"                 # running, final or incomplete (stopped or failed)
    leader: str | None = None              # the best mean at its deciding level
    leader_tps: float | None = None
    leader_ci: list | None = None
    leader_level: int | None = None
    runner_up: str | None = None
    runner_up_tps: float | None = None
    runner_up_level: int | None = None
    difference: stats.Difference | None = None   # the leader over the runner-up
    significant: bool = False              # the difference's CI is above zero and above min_effect
    min_effect_pct: float = MIN_EFFECT_PCT
    tied: list[str] = field(default_factory=list)  # the leader and every config it is not told apart from
    basis: str = ""                        # what the comparison is made on
    method: str = stats.METHOD
    per_slo: list[dict] = field(default_factory=list)   # per SLO: the best config and level, with its CI
    conditions_note: str = ""              # cells measured under different host conditions
    pruned_saved_s: float | None = None    # visits pruning skipped, in estimated seconds
    slo_answer: dict | None = None         # with an [slo]: the config serving the most streams within it

    @property
    def winner(self) -> str | None:
        """Named only when the campaign is finished and the difference is beyond the noise."""
        return self.leader if self.significant and self.phase == "final" else None

    @property
    def tie(self) -> bool:
        return len(self.tied) > 1

    @property
    def margin_pct(self) -> float | None:
        return self.difference.pct if self.difference else None

    def verdict(self) -> tuple[str, str, str]:
        """The one answer line, as (label, names, rest), for `campaign show`, `campaign list` and the tab."""
        prefix = {"running": "so far, ", "incomplete": "incomplete (campaign stopped): "}.get(self.phase, "")
        if self.slo_answer is not None:
            return _load_verdict(self.slo_answer, self.phase, prefix)
        if not self.leader:
            return ("no winner: no config finished a level" if self.phase == "final" else "no winner yet"), "", \
                f" ({self.basis})"
        at = f" at {self.leader_tps:.2f} tok/s (CI {_ci(self.leader_ci)}) at c={self.leader_level}"
        if not self.runner_up:
            label = {"final": "only result: ", "running": "leading so far: "}.get(self.phase, prefix + "only result: ")
            return label, self.leader, f"{at}, nothing to compare against ({self.basis})"
        diff = self.difference
        assert diff is not None  # compare() sets it with the runner-up
        if self.significant:
            label = {"final": "winner: ", "running": "leading so far: "}.get(self.phase, prefix + "leading: ")
            return label, self.leader, (f"{at}, {diff.pct:+.1f}% over {self.runner_up} "
                                        f"(CI {stats.signed(diff.lo)} … {stats.signed(diff.hi)}) ({self.basis})")
        names = ", ".join(self.tied[:-1]) + f" and {self.tied[-1]}" if self.tied else self.leader
        why = "" if diff.lo is None or diff.lo <= 0 else f", below the {self.min_effect_pct:g}% minimum effect"
        return (prefix + "no significant difference between ", names,
                f" ({diff.text()}{why}; {self.leader_tps:.2f} vs {self.runner_up_tps:.2f} tok/s) ({self.basis})")

    def to_json(self) -> dict:
        return {"results": [r.to_json() for r in self.results], "phase": self.phase,
                "winner": self.winner, "leader": self.leader, "leader_tps": self.leader_tps,
                "leader_ci": self.leader_ci, "leader_level": self.leader_level,
                "runner_up": self.runner_up, "runner_up_tps": self.runner_up_tps,
                "runner_up_level": self.runner_up_level,
                "difference": self.difference.to_json() if self.difference else None,
                "margin_pct": self.margin_pct, "significant": self.significant,
                "min_effect_pct": self.min_effect_pct, "tie": self.tie, "tied": list(self.tied),
                "verdict": "".join(self.verdict()), "basis": self.basis, "method": self.method,
                "per_slo": self.per_slo, "conditions_note": self.conditions_note,
                "pruned_saved_s": self.pruned_saved_s, "roofline_note": self.roofline_note,
                "slo_answer": self.slo_answer}


def _load_verdict(answer: dict, phase: str, prefix: str) -> tuple[str, str, str]:
    """The answer of a campaign with an [slo]: the config that serves the most streams within it."""
    best = answer.get("config")
    if best is None:
        return (prefix + "no config held the SLO at any load"), "", f" ({answer['slo']})"
    label = {"final": "most users within the SLO: ", "running": "most users within the SLO so far: "}.get(
        phase, prefix + "most users within the SLO: ")
    load = answer["max_load"]
    lo, hi = load["interval"]
    rest = f" holds {answer['slo']} up to {load['max_concurrency']} streams (held at {lo} … {hi} over " \
           f"{load['visits']} visit(s)" + (f", failed at {load['first_fail']}" if load.get("first_fail") else
                                             ", the search's cap") + ")"
    if answer.get("runner_up"):
        other = answer["runner_up_load"]
        rest += f"; next {answer['runner_up']} up to {other['max_concurrency'] or 0}"
        if not answer.get("clear"):
            rest += " (their intervals overlap)"
    return label, best, rest


def _ci(ci) -> str:
    return UNKNOWN if not ci or ci[0] is None else f"{ci[0]:.2f} … {ci[1]:.2f}"


SLO_FIELDS = (("ttft_ms", "ttft_p99", "TTFT p99"), ("tpot_ms", "tpot_p99", "TPOT p99"))


def meets_slo(level: dict, slo: dict) -> bool:
    """A level's p99 TTFT and TPOT within the SLOs given (an unmeasured figure never meets one)."""
    for key, field_, _label in SLO_FIELDS:
        limit = slo.get(key)
        if limit is not None and (level.get(field_) is None or level[field_] > limit):
            return False
    return True


def rounds_of(cell: Cell) -> list[list[dict]]:
    """The repeats a cell finished, each its level rows; a cell from before repeats (or in its first visit)
    counts what it has as one."""
    def rows(levels) -> list[dict]:    # state.json is read back from disk: only well-formed rows count
        return [row for row in levels if isinstance(row, dict)] if isinstance(levels, list) else []

    saved = getattr(cell, "rounds", None)
    rounds = [rows(r.get("levels")) for r in (saved if isinstance(saved, list) else []) if isinstance(r, dict)]
    if rows(cell.levels) and (not rounds or cell.status == "crashed"):
        rounds = [*rounds, rows(cell.levels)]     # the visit that crashed counts up to where it crashed
    return rounds


def _measured(row: dict) -> bool:
    tok_s = LevelResult.from_doc(row).measured_tok_s   # the store's one rule for a measured level
    return tok_s is not None and math.isfinite(tok_s)   # and a rate the statistics can take (not Infinity)


def result_of(cell: Cell, slo: dict, detail: bool = True) -> ConfigResult:
    rounds = rounds_of(cell)
    out = ConfigResult(cell=cell.name, status=cell.status, flags=dict(cell.flags), levels=[],
                       crash_class=cell.crash_class, note=cell.note, repeats=len(rounds))
    last = cell.rounds[-1] if isinstance(cell.rounds, list) and cell.rounds and isinstance(cell.rounds[-1], dict) \
        else {}
    out.ended_by, out.ended_why = last.get("ended_by"), last.get("ended_why") or ""
    searches = [r["slo_search"] for r in (cell.rounds if isinstance(cell.rounds, list) else [])
                if isinstance(r, dict) and isinstance(r.get("slo_search"), dict)]
    if searches:
        from .slo_search import combine

        out.max_load = combine(searches)
    order: list[int] = []
    for rows in rounds:
        for row in rows:
            c = row.get("concurrency")
            if isinstance(c, int) and c not in order:
                order.append(c)
            if row.get("status") != "ok" and isinstance(c, int) and (out.crashed_at is None or c < out.crashed_at) \
                    and cell.crash_class:
                out.crashed_at = c
    for c in sorted(order):
        found = [next((r for r in rows if r.get("concurrency") == c), None) for rows in rounds]
        present = [r for r in found if r is not None]
        # a level the server died in (or a repeat never reached) is unfinished; else invalid repeats
        # (console.campaign.validity) are kept and shown, and left out of the answer
        invalid = invalid_repeats(present) if len(present) == len(found) and \
            not any(r.get("status") == "failed" for r in present) else {}
        shown_invalid = [{"repeat": i + 1, "why": why} for i, why in sorted(invalid.items())]
        valid = [r for i, r in enumerate(found) if i not in invalid]
        if found and not valid:
            out.levels.append({"concurrency": c, "status": "invalid", "finished": False,
                               "note": shown_invalid[0]["why"], "invalid": shown_invalid})
            continue
        measured = [r for r in valid if r is not None and _measured(r)]
        if len(measured) < len(valid):
            failed = next((r for r in valid if r is not None and not _measured(r)), None)
            out.levels.append({"concurrency": c, "status": failed.get("status") if failed else "missing",
                               "finished": False, "note": (failed or {}).get("note", ""),
                               "invalid": shown_invalid})
            continue
        level = stats.LevelStats.of(c, measured, detail)
        out.stats[c] = level
        est = level.estimates
        row = {"concurrency": c, "status": "ok", "finished": True, "output_throughput": est["tps"].mean,
               "energy": energy_of(measured),
               **{m: level.mean(m) for m in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99")},
               "stats": level.to_json(), "invalid": shown_invalid}
        out.levels.append(row)
        tps = est["tps"].mean
        if tps is None:  # never: every row kept measured a finite rate
            continue
        if out.best_tps is None or tps > out.best_tps:
            out.best_tps, out.best_level, out.best_ci = tps, c, [est["tps"].lo, est["tps"].hi]
        if slo and meets_slo(row, slo) and (out.best_within_slo is None or tps > out.best_within_slo):
            out.best_within_slo, out.best_within_slo_level = tps, c
    out.deciding_level = out.best_within_slo_level if slo else out.best_level
    if slo and out.max_load is None:
        out.max_load = swept_load(out.levels, slo, out.repeats)
    return out


def energy_of(rows: list[dict]) -> dict | None:
    """A level's output tokens per joule and average power, the mean over its repeats (console.bench.energy);
    unknown (with why) when any repeat's power was unknown."""
    found = [r.get("energy") for r in rows]
    if not any(isinstance(e, dict) for e in found):
        return None     # a campaign from before energy was measured: nothing to say, not even N/A
    known = [e for e in found if isinstance(e, dict) and isinstance(e.get("tok_per_j"), (int, float))
             and isinstance(e.get("avg_power_w"), (int, float))]
    if not found or len(known) < len(found):
        why = next((e.get("why") for e in found if isinstance(e, dict) and e.get("why")), "power not sampled")
        return {"tok_per_j": None, "avg_power_w": None, "source": None, "why": why}
    source = "SIMULATED" if any(e.get("source") == "SIMULATED" for e in known) else "measured"
    return {"tok_per_j": sum(e["tok_per_j"] for e in known) / len(known),
            "avg_power_w": sum(e["avg_power_w"] for e in known) / len(known), "source": source,
            "repeats": len(known)}


def energy_lines(comp: Comparison) -> list[str]:
    """Tokens per joule per level: N/A where power is unknown (a CPU host), SIMULATED in the demo."""
    lines = []
    for r in comp.results:
        for lv in r.levels:
            e = lv.get("energy")
            if not lv.get("finished") or not isinstance(e, dict):
                continue
            if e.get("tok_per_j") is None:
                text = f"N/A ({e.get('why') or 'power unknown'})"
            else:
                text = f"{e['tok_per_j']:.3g} tok/J at {e['avg_power_w']:.0f} W" + \
                    (" (SIMULATED)" if e.get("source") == "SIMULATED" else "")
            lines.append(f"  {r.cell[:44]:<44} c={lv['concurrency']:<5} {text}")
    return ["output tokens per joule (GPUs the server holds), per level:"] + lines if lines else []


def energy_summary(comp: Comparison) -> list[str]:
    """One line per config: its levels' tokens per joule (the Campaign tab's short form of `energy_lines`)."""
    out = []
    for r in comp.results:
        found = [(lv["concurrency"], lv["energy"]) for lv in r.levels
                 if lv.get("finished") and isinstance(lv.get("energy"), dict)]
        if not found:
            continue
        if all(e.get("tok_per_j") is None for _c, e in found):
            out.append(f"{r.cell}: tok/J N/A ({found[0][1].get('why') or 'power unknown'})")
            continue
        parts = [f"c={c} {e['tok_per_j']:.3g}" if e.get("tok_per_j") is not None else f"c={c} N/A" for c, e in found]
        simulated = any(e.get("source") == "SIMULATED" for _c, e in found)
        out.append(f"{r.cell}: tok/J " + " · ".join(parts) + (" (SIMULATED)" if simulated else ""))
    return out


def load_text(load: dict | None) -> str:
    """A config's highest load within the SLO, with its interval, in words."""
    if not load:
        return "not searched"
    lo, hi = load["interval"]
    held = f"held at c={load['max_concurrency'] or 0}"
    if load.get("from") == "swept levels":
        span = f" (the limit lies in {lo} … {hi})" if load.get("first_fail") else " (the highest level swept)"
    else:
        span = f" (visits held {lo} … {hi})"
    return held + span + (f", failed at c={load['first_fail']}" if load.get("first_fail") else "")


def swept_load(levels: list[dict], slo: dict, repeats: int) -> dict | None:
    """Without an [slo] search, the highest load within the [sweep] SLO that the swept levels show: the
    highest level below the first that failed it (a level unfinished fails it); its interval runs up to
    the level just below that failure, as far as the sweep's levels can tell."""
    ordered = sorted((lv for lv in levels if isinstance(lv.get("concurrency"), int)), key=lambda lv: lv["concurrency"])
    if not ordered:
        return None
    held, fail = None, None
    for lv in ordered:
        if lv.get("finished") and meets_slo(lv, slo):
            held = lv["concurrency"]
        else:
            fail = lv["concurrency"]
            break
    return {"max_concurrency": held, "interval": [held or 0, (fail - 1) if fail else held or 0],
            "first_fail": fail, "visits": repeats, "capped": fail is None, "from": "swept levels"}


def _efficiency(roof, result: ConfigResult, level: int | None) -> float | None:
    row = next((lv for lv in result.levels if lv["concurrency"] == level and lv.get("finished")), None)
    if row is None or not level:
        return None
    ideal = roof.tok_s(level, "ideal")
    return round(100 * row["output_throughput"] / ideal, 2) if ideal else None


def _against_roofline(result: ConfigResult, roof) -> None:
    from ..roofline.calibrate import calibrate

    result.efficiency_pct = _efficiency(roof, result, result.best_level)
    result.efficiency_deciding_pct = _efficiency(roof, result, result.deciding_level)
    points = [(lv["concurrency"], lv["tpot_p50"] / 1000) for lv in result.levels
              if lv.get("finished") and lv.get("tpot_p50") and lv.get("concurrency")]
    outcome = calibrate(roof, points)
    result.calibration = outcome.calibration.to_json() if outcome.calibration is not None else None
    result.calibration_refused = outcome.reason


def _policy(state: CampaignState) -> dict:
    policy = state.spec.get("policy") if isinstance(state.spec, dict) else None
    return policy if isinstance(policy, dict) else {}


def min_effect_of(state: CampaignState) -> float:
    value = _policy(state).get("min_effect", MIN_EFFECT_PCT)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 \
        else MIN_EFFECT_PCT


def phase_of(state: CampaignState) -> str:
    if state.status == "finished":
        return "final"
    return "running" if state.status == "running" else "incomplete"


def _slo_label(slo: dict) -> str:
    parts = [f"{label} ≤ {slo[key]:g} ms" for key, _f, label in SLO_FIELDS if key in slo]
    return ", ".join(parts) or "no SLO"


def _best_under(results: list[ConfigResult], slo: dict) -> dict:
    best = None
    for r in results:
        for lv in r.levels:
            if lv.get("finished") and meets_slo(lv, slo) and (best is None or lv["output_throughput"] > best[1]["output_throughput"]):
                best = (r, lv)
    if best is None:
        return {"slo": _slo_label(slo), "config": None, "level": None, "tps": None, "ci": None}
    r, lv = best
    return {"slo": _slo_label(slo), "config": r.cell, "level": lv["concurrency"], "tps": lv["output_throughput"],
            "ci": lv["stats"]["tps"]["ci"]}


def slo_sets(slo: dict) -> list[dict]:
    """The SLOs the best is given under: each alone, then all together ({} when none is given)."""
    if not slo:
        return [{}]
    singles = [{key: slo[key]} for key, _f, _l in SLO_FIELDS if key in slo]
    return [*singles, dict(slo)] if len(singles) > 1 else singles


def pruned_saved(state: CampaignState, repeats: int) -> float | None:
    """The visits pruning skipped, at the campaign's mean visit time."""
    visits = [r for c in state.cells for r in (getattr(c, "rounds", None) or [])
              if isinstance(r, dict) and isinstance(r.get("elapsed_s"), (int, float))]
    skipped = sum(max(0, repeats - len(c.rounds)) for c in state.cells
                  if getattr(c, "pruned", "") and isinstance(c.rounds, list))
    if not skipped or not visits:
        return None
    return skipped * sum(r["elapsed_s"] for r in visits) / len(visits)


def compare(state: CampaignState, roof=None, roof_note: str = "", detail: bool = False) -> Comparison:
    """The answer; with `detail`, every level carries the latencies' intervals too (for --json).
    `roof_note` is why there is no roofline (roofline.from_profile.roofline_for): efficiency reads N/A."""
    sweep = state.spec.get("sweep") or {}
    slo = sweep.get("slo") or {}
    results = [result_of(c, slo, detail) for c in state.cells]
    if roof is not None:
        for r in results:
            _against_roofline(r, roof)
    key = "best_within_slo" if slo else "best_tps"
    ranked = sorted((r for r in results if getattr(r, key) is not None), key=lambda r: getattr(r, key), reverse=True)
    comp = Comparison(results=results, roofline_note=f"efficiency N/A: {roof_note}" if roof_note else "",
                      phase=phase_of(state),
                      min_effect_pct=min_effect_of(state),
                      basis=("mean output tok/s at the best level whose mean p99s meet every SLO" if slo
                             else "mean output tok/s at the best level finished in every repeat (no SLO given)"))
    comp.per_slo = [_best_under(results, s) for s in slo_sets(slo)]
    comp.conditions_note = spread_note([r.get("conditions") for c in state.cells
                                        for r in (getattr(c, "rounds", None) or []) if isinstance(r, dict)])
    comp.pruned_saved_s = pruned_saved(state, int(sweep.get("repeats") or 1))
    if isinstance(state.spec.get("slo"), dict) and state.spec["slo"]:
        comp.slo_answer = _most_users(results, state.spec["slo"])
    if not ranked:
        return comp
    lead = ranked[0]
    comp.leader, comp.leader_tps, comp.leader_level = lead.cell, getattr(lead, key), lead.deciding_level
    est = lead.stats[lead.deciding_level].estimates["tps"]
    comp.leader_ci = [est.lo, est.hi]
    if len(ranked) == 1:
        return comp
    second = ranked[1]
    comp.runner_up, comp.runner_up_tps, comp.runner_up_level = second.cell, getattr(second, key), second.deciding_level
    comp.difference = _diff(lead, second)
    comp.significant = comp.difference.beyond(comp.min_effect_pct)
    if not comp.significant:
        comp.tied = [lead.cell] + [r.cell for r in ranked[1:]
                                   if not _diff(lead, r).beyond(comp.min_effect_pct)]
    return comp


def _most_users(results: list[ConfigResult], slo_doc: dict) -> dict:
    """The config with the highest load under the SLO (its lowest over its visits), and the next one."""
    from .slo_search import parse

    slo = parse(slo_doc)
    loads = sorted(((r.cell, r.max_load) for r in results if r.max_load and r.max_load.get("max_concurrency")),
                   key=lambda x: (x[1]["max_concurrency"], x[1]["interval"][1]), reverse=True)
    out: dict = {"slo": slo.label() if slo else "", "config": None}
    if not loads:
        return out
    out |= {"config": loads[0][0], "max_load": loads[0][1]}
    if len(loads) > 1:
        second = loads[1][1]
        out |= {"runner_up": loads[1][0], "runner_up_load": second,
                "clear": loads[0][1]["interval"][0] > second["interval"][1]}
    else:
        failed = [r.cell for r in results if r.max_load is not None and not r.max_load.get("max_concurrency")]
        if failed:
            out |= {"runner_up": failed[0], "runner_up_load": {"max_concurrency": None}, "clear": True}
    return out


def _diff(a: ConfigResult, b: ConfigResult) -> stats.Difference:
    ra, rb = a.repeats_at(a.deciding_level), b.repeats_at(b.deciding_level)
    return stats.difference("tps", ra, rb, paired=True)


def clearly_behind(state: CampaignState) -> list[tuple[str, str]]:
    """Configs whose interval's top is below the leader's interval's bottom: (name, why), for pruning."""
    slo = (state.spec.get("sweep") or {}).get("slo") or {}
    results = [result_of(c, slo, detail=False) for c in state.cells]
    key = "best_within_slo" if slo else "best_tps"
    ranked = [r for r in results if getattr(r, key) is not None and r.repeats >= 2]
    if len(ranked) < 2:
        return []
    ranked.sort(key=lambda r: getattr(r, key), reverse=True)
    lead = ranked[0]
    floor = lead.stats[lead.deciding_level].estimates["tps"].lo
    out = []
    for r in ranked[1:]:
        top = r.stats[r.deciding_level].estimates["tps"].hi
        if floor is not None and top is not None and top < floor:
            out.append((r.cell, f"pruned after {r.repeats} repeats: CI top {top:.2f} tok/s is below "
                                f"{lead.cell}'s CI bottom {floor:.2f}"))
    return out


def _n(value, fmt="{:.2f}") -> str:
    return UNKNOWN if value is None else fmt.format(value)


def _pm(level: dict) -> str:
    """31.50±1.2: the mean and the half-width of its interval."""
    tps = (level.get("stats") or {}).get("tps") or {}
    ci = tps.get("ci")
    mean = level.get("output_throughput")
    if mean is None:
        return UNKNOWN
    if not ci or ci[0] is None or tps.get("repeats", 0) * max(1, tps.get("requests", 0)) <= 1:
        return f"{mean:.2f}"
    return f"{mean:.1f}±{max(mean - ci[0], ci[1] - mean):.1f}"


def invalid_lines(comp: Comparison) -> list[str]:
    """The repeats left out of the answer, each named with why (console.campaign.validity)."""
    found = [(r.cell, lv["concurrency"], bad) for r in comp.results for lv in r.levels for bad in lv.get("invalid") or []]
    if not found:
        return []
    return ["invalid repeats (kept, left out of the answer):"] + \
        [f"  {cell[:44]} c={c} repeat {bad['repeat']}: {bad['why']}" for cell, c, bad in found]


def crash_text(r: ConfigResult) -> str:
    if r.crashed_at is not None:
        return f"crashed at c={r.crashed_at}: {r.crash_class}"
    return r.crash_class or r.note


def efficiency_text(r: ConfigResult) -> str:
    """Efficiency against the roofline's ideal where the comparison was decided and at the config's best level."""
    def at(pct, level):
        return f"{_n(pct)}{'%' if pct is not None else ''} at c={level or UNKNOWN}"
    return (f"efficiency {at(r.efficiency_deciding_pct, r.deciding_level)} (deciding level), "
            f"{at(r.efficiency_pct, r.best_level)} (best level)")


def efficiency_lines(comp: Comparison) -> list[str]:
    lines = ["against the roofline (fit of TPOT = ideal step / eta + overhead):"]
    for r in comp.results:
        cal = r.calibration or {}
        if not cal and r.calibration_refused:   # the reason, not two bare N/As
            lines.append(f"  {r.cell[:44]:<44} {efficiency_text(r)} · eta and overhead: {r.calibration_refused}")
            continue
        eta = f"eta {cal['eta'] * 100:.1f}%" if cal.get("eta") else f"eta {UNKNOWN}"
        over = f"overhead {cal['overhead_ms']:.1f} ms/step" if cal else f"overhead {UNKNOWN}"
        lines.append(f"  {r.cell[:44]:<44} {efficiency_text(r)} · {eta} · {over}")
    return lines


def slo_lines(comp: Comparison) -> list[str]:
    out = []
    for best in comp.per_slo:
        if best["config"] is None:
            out.append(f"  {best['slo']}: no config met it at any level it finished")
        else:
            ci = best.get("ci") or [None, None]
            interval = f"CI {_n(ci[0])} … {_n(ci[1])}" if ci[0] is not None else \
                "no CI: one repeat, no per-request samples"
            out.append(f"  {best['slo']}: {best['config']} at c={best['level']}, {best['tps']:.2f} tok/s ({interval})")
    return out


def table_lines(state: CampaignState, roof=None, roof_note: str = "", comp: Comparison | None = None,
                reading=None) -> list[str]:
    """The campaign's result table, as `campaign show` prints it; headed by the campaign's reading
    (`owner.read`: its driver, progress, time left) when the caller has one."""
    comp = comp or compare(state, roof, roof_note)
    sweep = state.spec.get("sweep") or {}
    levels = sweep.get("levels") or []
    repeats = int(sweep.get("repeats") or 1)
    lines = [reading.line(state.profile) if reading is not None else
             f"{state.id} · profile {state.profile} · {state.status}" + (f" · {state.note}" if state.note else "")]
    lines.append(f"mean output tok/s ± half its 95% CI per level, over up to {repeats} repeat(s) "
                 "(mean TTFT/TPOT p99 ms below)")
    head = f"{'config':<44} {'state':<13} {'runs':>4} " + " ".join(f"{'c=' + str(c):>11}" for c in levels) \
        + "  crash / note"
    lines.append(head)
    for r in comp.results:
        by_c = {lv.get("concurrency"): lv for lv in r.levels}
        cells, lat = [], []
        for c in levels:
            lv = by_c.get(c)
            if lv is None:
                cells.append(f"{'·' if r.status in ('queued',) and not r.repeats else UNKNOWN:>11}")
                lat.append(f"{'':>11}")
            elif lv.get("finished"):
                cells.append(f"{_pm(lv):>11}")
                lat.append(f"{_n(lv.get('ttft_p99'), '{:.0f}') + '/' + _n(lv.get('tpot_p99'), '{:.0f}'):>11}")
            elif lv.get("status") == "invalid":
                cells.append(f"{'✖ invalid':>11}")
                lat.append(f"{'':>11}")
            else:
                cells.append(f"{'✖ ' + str(lv.get('status')):>11}")
                lat.append(f"{'':>11}")
        name = r.cell if len(r.cell) <= 44 else r.cell[:43] + "…"
        why = crash_text(r)
        lines.append(f"{name:<44} {r.status:<13} {r.repeats:>4} " + " ".join(cells) + (f"  {why}" if why else ""))
        lines.append(f"{'':<44} {'':<13} {'':>4} " + " ".join(lat))
    lines += invalid_lines(comp)
    lines += energy_lines(comp)
    if comp.slo_answer is not None or any(r.max_load for r in comp.results):
        label = comp.slo_answer["slo"] if comp.slo_answer is not None else _slo_label(sweep.get("slo") or {})
        lines.append(f"highest load within the SLO ({label}), per config" +
                     ("" if comp.slo_answer is not None else " (from the swept levels)") + ":")
        for r in comp.results:
            load = r.max_load or {}
            lines.append(f"  {r.cell[:44]:<44} " + load_text(load))
    if roof is not None:
        lines += efficiency_lines(comp)
    elif comp.roofline_note:
        lines.append(comp.roofline_note)
    lines.append("best per SLO (mean output tok/s, 95% CI):")
    lines += slo_lines(comp)
    if comp.conditions_note:
        lines.append(comp.conditions_note)
    ended = [r for r in comp.results if r.ended_by in ("precision", "max_repeats")]
    if ended:
        lines.append(f"repeats until sure ({sum(r.repeats for r in comp.results)} visits in all):")
        lines += [f"  {r.cell[:44]:<44} {r.ended_why}" for r in ended]
    if comp.pruned_saved_s:
        lines.append(f"pruning saved about {comp.pruned_saved_s:.0f} s of repeats on configs clearly behind")
    lines.append(comp.method)
    lines.append("".join(comp.verdict()))
    return lines
