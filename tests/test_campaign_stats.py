"""A campaign's answer holds up: intervals from repeats, a winner only beyond the noise, honest phases."""
from __future__ import annotations

import random
import xml.etree.ElementTree as ET

from console.store import campaigns as st
from console.campaign import stats
from console.campaign.compare import compare, table_lines
from console.campaign.conditions import parse_loadavg, spread_note
from console.campaign.order import round_order, visits
from console.campaign.pareto import frontier
from console.campaign.svg import render


def _level(c: int, tps: float, rng: random.Random, noise: float = 0.1, status: str = "ok") -> dict:
    tokens = [8] * 16
    e2el = [1000 * 8 * c / tps * (1 + rng.gauss(0, noise)) for _ in tokens]
    return {"concurrency": c, "status": status, "completed": 16, "failed": 0,
            "output_throughput": tps * (1 + rng.gauss(0, noise)) if status == "ok" else None,
            "ttft_p50": 50.0, "ttft_p99": 90.0, "tpot_p50": 10.0, "tpot_p99": 12.0,
            "samples": {"tokens": tokens, "e2el_ms": e2el, "ttft_ms": [50 + rng.random() * 40 for _ in tokens],
                        "tpot_ms": [10 + rng.random() * 2 for _ in tokens]}}


def _cell(name: str, tps: float, seed: int, repeats: int = 3, noise: float = 0.1, **kw) -> st.Cell:
    rng = random.Random(seed)
    rounds = [{"levels": [_level(1, tps / 2, rng, noise), _level(4, tps, rng, noise)]} for _ in range(repeats)]
    return st.Cell(name=name, base=name, status=kw.pop("status", "done"), rounds=rounds, **kw)


def _campaign(*cells: st.Cell, status: str = "finished", slo: dict | None = None, policy: dict | None = None):
    spec = {"sweep": {"levels": [1, 4], "repeats": 3, **({"slo": slo} if slo else {})}, "policy": policy or {}}
    return st.CampaignState(id="c1", profile="box", spec=spec, cells=list(cells), status=status)


def test_identical_configs_are_no_significant_difference_with_the_interval_named():
    comp = compare(_campaign(_cell("a", 20.0, 1), _cell("b", 20.0, 2)))
    assert not comp.significant and comp.winner is None and comp.tied == [comp.leader, comp.runner_up]
    line = "".join(comp.verdict())
    assert line.startswith("no significant difference between ")
    assert "CI −" in line and "… +" in line and "winner" not in line


def test_a_config_twice_as_fast_wins_with_its_interval():
    comp = compare(_campaign(_cell("slow", 10.0, 1), _cell("fast", 20.0, 2)))
    assert comp.winner == "fast" and comp.significant and comp.difference.lo > 2.0
    assert "".join(comp.verdict()).startswith("winner: fast at ")
    assert comp.to_json()["difference"]["ci"][0] > 0


def test_the_intervals_are_the_same_every_time():
    a = compare(_campaign(_cell("a", 20.0, 1), _cell("b", 18.0, 2))).to_json()
    stats.estimate.cache_clear()
    stats.difference.cache_clear()
    b = compare(_campaign(_cell("a", 20.0, 1), _cell("b", 18.0, 2))).to_json()
    assert a == b


def test_a_tight_difference_below_min_effect_names_no_winner():
    # without noise the interval is tight around +1.5%: real, but smaller than the 2% worth naming
    comp = compare(_campaign(_cell("a", 20.3, 1, noise=0.0), _cell("b", 20.0, 2, noise=0.0)))
    assert comp.difference.lo > 0 and not comp.significant
    assert "below the 2% minimum effect" in "".join(comp.verdict())
    lowered = compare(_campaign(_cell("a", 20.3, 1, noise=0.0), _cell("b", 20.0, 2, noise=0.0),
                                policy={"min_effect": 1.0}))
    assert lowered.winner == "a"


def test_until_done_the_leader_is_leading_so_far_and_a_stopped_campaign_is_incomplete():
    running = compare(_campaign(_cell("slow", 10.0, 1), _cell("fast", 20.0, 2), status="running"))
    assert running.winner is None and running.verdict()[0] == "leading so far: "
    stopped = compare(_campaign(_cell("slow", 10.0, 1), _cell("fast", 20.0, 2), status="stopped"))
    assert stopped.winner is None and stopped.verdict()[0].startswith("incomplete (campaign stopped)")
    nothing = compare(_campaign(st.Cell(name="a", base="a"), status="running"))
    assert nothing.verdict()[0] == "no winner yet"


def test_a_crashed_config_is_never_compared_at_a_level_it_did_not_finish():
    rng = random.Random(3)
    crashed = st.Cell(name="crashy", base="crashy", status="crashed", crash_class="cuda-illegal-address",
                      levels=[_level(1, 10.0, rng), _level(4, 5.0, rng, status="failed")])
    comp = compare(_campaign(crashed, _cell("steady", 12.0, 4)))
    row = next(r for r in comp.results if r.cell == "crashy")
    assert row.crashed_at == 4 and row.best_level == 1 and 4 not in row.stats
    assert "crashed at c=4: cuda-illegal-address" in "\n".join(table_lines(_campaign(crashed, _cell("steady", 12.0, 4))))
    assert comp.leader == "steady" and comp.leader_level == 4


def test_under_an_slo_the_comparison_and_the_best_per_slo_use_levels_within_it():
    comp = compare(_campaign(_cell("a", 20.0, 1), _cell("b", 10.0, 2), slo={"ttft_ms": 80.0}))
    assert comp.leader is None   # every level's mean p99 TTFT is 90 ms: none meets 80
    assert comp.per_slo[0]["config"] is None
    ok = compare(_campaign(_cell("a", 20.0, 1), _cell("b", 10.0, 2), slo={"ttft_ms": 100.0, "tpot_ms": 50.0}))
    assert ok.winner == "a" and [p["config"] for p in ok.per_slo] == ["a", "a", "a"]
    assert ok.per_slo[-1]["ci"][0] < ok.per_slo[-1]["tps"] < ok.per_slo[-1]["ci"][1]


def test_repeats_are_visited_in_rotated_rounds():
    assert round_order("ABC", 0) == list("ABC") and round_order("ABC", 1) == list("CAB")
    assert round_order("ABC", 2) == list("BCA") and round_order("ABC", 3) == list("ABC")
    assert [v for _r, v in visits("AB", 3)] == list("ABBAAB")


def test_different_host_conditions_are_said():
    assert parse_loadavg("2.44 0.95 0.36 3/200 1234\n") == 2.44 and parse_loadavg("junk") is None
    assert spread_note([{"load1": 0.5}, {"load1": 0.9}]) == ""
    note = spread_note([{"load1": 0.3, "temperature_c": 40}, {"load1": 2.9, "temperature_c": 80}])
    assert "load average 0.30 … 2.90" in note and "GPU temperature 40 … 80" in note
    comp = compare(_campaign(_cell("a", 20.0, 1), _cell("b", 10.0, 2)))
    assert comp.conditions_note == ""


def test_the_frontier_keeps_points_no_other_config_beats_on_both_axes():
    comp = compare(_campaign(_cell("slow", 10.0, 1), _cell("fast", 20.0, 2)))
    front = frontier(comp, gpus=2, slo={"tpot_ms": 50.0})
    on = {(p.config, p.concurrency) for p in front.on_frontier}
    assert ("fast", 4) in on and ("slow", 4) not in on
    p = next(p for p in front.points if (p.config, p.concurrency) == ("fast", 4))
    assert p.x_ci[0] <= p.x <= p.x_ci[1] and abs(p.y - p.x * 2 / 4) < 1e-9
    assert front.slo_lines == [{"axis": "y", "value": 20.0, "label": "TPOT SLO 50 ms"}]
    assert front.to_json()["frontier"]


def test_the_frontier_svg_is_well_formed_and_escapes_names():
    comp = compare(_campaign(_cell("a<&>", 10.0, 1), _cell("b", 20.0, 2)))
    svg = render(frontier(comp, None, {"tpot_ms": 100.0}), title="t")
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg")
    assert "a&lt;&amp;&gt;" in svg and "frontier" in svg and "TPOT SLO 100 ms" in svg


def test_prune_names_configs_whose_interval_is_wholly_below_the_leaders_and_the_time_it_saved():
    from console.campaign.compare import clearly_behind

    fast, close, slow = _cell("fast", 20.0, 1, repeats=2), _cell("close", 19.5, 2, repeats=2), \
        _cell("slow", 5.0, 3, repeats=2)
    for c in (fast, close, slow):
        c.status = "queued"
        for r in c.rounds:
            r["elapsed_s"] = 10.0
    state = _campaign(fast, close, slow, status="running")
    behind = dict(clearly_behind(state))
    assert list(behind) == ["slow"] and "below fast's CI bottom" in behind["slow"]
    slow.pruned, slow.status = behind["slow"], "done"
    comp = compare(state)
    assert comp.pruned_saved_s == 10.0          # one of three repeats skipped, at 10 s a visit
    assert "pruning saved about 10 s" in "\n".join(table_lines(state))


def test_the_answer_says_when_cells_ran_under_different_conditions():
    a, b = _cell("a", 20.0, 1), _cell("b", 10.0, 2)
    for i, r in enumerate(a.rounds + b.rounds):
        r["conditions"] = {"load1": 0.2 + 1.5 * (i % 2)}
    lines = table_lines(_campaign(a, b))
    assert any(line.startswith("cells were measured under different host conditions (load average 0.20 … 1.70")
               for line in lines)


def test_malformed_rounds_read_back_from_disk_are_skipped_not_a_traceback():
    bad = st.Cell(name="bad", base="bad", status="done",
                  rounds=["junk", {"levels": "not a list"}, {"levels": [7, {"concurrency": 4, "status": "ok",
                                                                             "output_throughput": "fast"}]}])
    comp = compare(_campaign(bad, _cell("good", 20.0, 1)))
    assert comp.leader == "good"
    assert "bad" in "\n".join(table_lines(_campaign(bad, _cell("good", 20.0, 1))))


def test_a_level_measured_at_an_infinite_rate_is_no_best_and_no_traceback():
    """The store counts `output_throughput: Infinity` as measured, the statistics keep only finite
    values: the level had no mean, and comparing it with the best raised a TypeError. It is no
    measured level to a campaign."""
    inf = _cell("inf", 20.0, 1)
    for r in inf.rounds:
        r["levels"][1]["output_throughput"] = float("inf")
    comp = compare(_campaign(inf, _cell("good", 20.0, 2)))
    assert comp.leader == "good"
    assert "inf" in "\n".join(table_lines(_campaign(inf, _cell("good", 20.0, 2))))
