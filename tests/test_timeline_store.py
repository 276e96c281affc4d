"""A run's timeline on disk: bounded series on one clock, written once, read back typed."""
from __future__ import annotations

import json

import pytest

from console.store.timeline import CAP, Series, TimelineWriter, read_timeline, timeline_path
from profiles.atomic import StateFileError


def test_a_series_never_holds_more_than_its_cap_and_keeps_the_whole_span():
    series = Series(cap=100)
    for i in range(10_000):
        series.add([float(i), i])
    assert len(series.points) < 100
    # thinned evenly: the first point and one near the end are kept, not just the first hundred
    assert series.points[0][0] == 0.0
    assert series.points[-1][0] > 9_000
    gaps = {b[0] - a[0] for a, b in zip(series.points, series.points[1:])}
    assert gaps == {float(series.stride)}


def test_the_default_cap_is_ten_thousand_points():
    assert CAP == 10_000


def test_written_and_read_back_on_one_clock_with_a_wall_anchor(tmp_path):
    run = tmp_path / "sweep-1.json"
    ticks = iter([100.0, 100.5, 101.25, 101.5, 102.0])
    tl = TimelineWriter(timeline_path(run), clock=lambda: next(ticks))
    tl.add("client", tl.now(), 0, 120.0, 4)
    tl.add("server", tl.now(), tl.now(), 4.0, 0.0, 0.5, None, 118.0)
    tl.add("requests", tl.t(100.1), tl.t(100.2), tl.t(101.0), 16, True, 0)
    tl.mark(tl.now(), "decisive line", "boom\x1b[31m red\x07", 0)
    tl.notes["0"] = ["inference: x"]
    tl.save()
    assert timeline_path(run).name == "sweep-1.timeline.json"
    back = read_timeline(run)
    assert back is not None
    assert back.rows("client") == [{"t": 0.5, "level": 0, "output_tok_s": 120.0, "in_flight": 4}]
    assert back.rows("server")[0]["kv_cache"] == 0.5 and back.rows("server")[0]["preemptions"] is None
    req = back.rows("requests")[0]
    assert req["t"] < req["first_token"] < req["end"]
    assert back.wall(1.0) == pytest.approx(tl.wall0 + 1.0)
    assert "\x1b" not in back.marks[0]["text"] and "\x07" not in back.marks[0]["text"]
    assert back.notes == {"0": ["inference: x"]}


def test_a_run_without_a_timeline_reads_as_none_and_garbage_is_named(tmp_path):
    run = tmp_path / "old.json"
    assert read_timeline(run) is None
    timeline_path(run).write_text("{not json")
    with pytest.raises(StateFileError):
        read_timeline(run)


def test_hostile_points_are_dropped_not_guessed(tmp_path):
    run = tmp_path / "r.json"
    timeline_path(run).write_text(json.dumps({"series": {
        "client": {"points": [[1.0, 0, 5.0, 1], ["x", 0, 5.0, 1], [2.0, 0], "nope", [True, 0, 1.0, 1]]},
        "server": "garbage"}, "marks": [{"t": "soon", "text": "a"}, {"t": 1, "text": "b"}]}))
    back = read_timeline(run)
    assert back.series["client"] == [[1.0, 0, 5.0, 1]]
    assert back.series["server"] == []
    assert [m["text"] for m in back.marks] == ["b"]


def test_a_gpu_samples_rows_are_kept_or_dropped_together_at_the_cap():
    series = Series(cap=100)
    for i in range(1_000):               # eight GPUs a sample: a plain halving would keep GPUs 0, 2, 4, 6 only
        series.add_group([[float(i), gpu, 100.0] for gpu in range(8)])
    assert len(series.points) < 100
    per_sample: dict[float, list[int]] = {}
    for t, gpu, _w in series.points:
        per_sample.setdefault(t, []).append(gpu)
    assert all(gpus == list(range(8)) for gpus in per_sample.values())
    times = sorted(per_sample)
    assert times[0] == 0.0 and times[-1] >= 1_000 - 2 * series.stride     # the whole span, evenly thinned
    assert {b - a for a, b in zip(times, times[1:])} == {float(series.stride)}
