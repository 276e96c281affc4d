"""Intervals that respect the quantity: a throughput or a latency never gets a bound below zero, a
difference keeps its sign, and the method covers the truth as often as it says it does."""
from __future__ import annotations

import math
import random

from console.campaign import stats
from console.campaign.compare import compare, table_lines
from tests.test_campaign_stats import _campaign, _cell


def _points(values: list[float], metric: str = "tps") -> tuple[stats.Repeat, ...]:
    return tuple(stats.Repeat(tps=v) if metric == "tps" else stats.Repeat(tps=1.0, **{metric: v}) for v in values)


def test_three_noisy_repeats_of_a_throughput_get_no_bound_below_zero():
    # the twin campaign's shape: one slow round and two fast ones (a t-interval on the raw values went to −15)
    for metric, values in (("tps", [21.0, 52.0, 88.0]), ("ttft_p50", [120.0, 300.0, 2100.0])):
        est = stats.estimate(metric, _points(values, metric))
        assert est.lo is not None and 0 < est.lo < est.mean < est.hi, (metric, est)


def test_a_difference_keeps_its_sign_and_never_falls_below_minus_100_percent():
    slow, fast = _points([10.0, 31.0, 12.0]), _points([40.0, 44.0, 41.0])
    down = stats.difference("tps", slow, fast, paired=True)
    assert down.pct < 0 and -100 < down.lo < down.hi, down
    up = stats.difference("tps", fast, slow, paired=False)
    assert up.pct > 0 and up.lo > -100 and up.hi > up.pct, up


def test_95_percent_intervals_cover_the_truth_of_a_skewed_quantity_at_least_93_percent_of_the_time():
    # per-repeat throughput log-normal with 40% spread: skewed, positive, its mean known exactly
    rng = random.Random(20261207)
    sigma, truth, trials = 0.4, 50.0, 400
    mu = math.log(truth) - sigma ** 2 / 2
    for n in (3, 5):
        hits = 0
        for _ in range(trials):
            est = stats.estimate("tps", _points([rng.lognormvariate(mu, sigma) for _ in range(n)]))
            assert est.lo > 0
            hits += est.lo <= truth <= est.hi
        assert hits / trials >= 0.93, (n, hits / trials)


def test_the_method_is_printed_with_the_answer():
    state = _campaign(_cell("a", 20.0, 1, noise=0.3), _cell("b", 20.0, 2, noise=0.3))
    comp = compare(state, detail=True)
    assert "log scale" in comp.method and "bootstrap" in comp.method
    assert comp.method in table_lines(state)
    for r in comp.results:
        for lv in r.levels:
            for metric, est in lv["stats"].items():
                assert est["ci"] is None or est["ci"][0] > 0, (r.cell, lv["concurrency"], metric, est)
