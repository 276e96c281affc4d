"""The report's timeline picture: three panels on one time axis with the crash's marks, written beside the
report for a run that recorded a timeline, and bounded in size however long the run."""
from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET

from console.bench.timeline_view import chart_data
from console.report.timeline_svg import MAX_MARKS, MAX_POINTS, render
from console.store.timeline import TimelineWriter, read_timeline, timeline_path
from tests.cli import gpudeck
from tests.test_bench_pane import DIED, saved_run
from tests.test_bench_timeline_view import RECORDED, RUN, RUN_ID

SVG = "{http://www.w3.org/2000/svg}"


def _recorded():
    tl = read_timeline(RECORDED.with_name(RUN))
    assert tl is not None
    return chart_data(tl, RUN_ID)


def test_the_crash_is_drawn_in_three_panels_with_its_marks():
    svg = render(_recorded(), "sim crash at 256")
    root = ET.fromstring(svg)
    lines = root.findall(f"{SVG}polyline")
    assert len(lines) == 5       # tok/s, in flight, KV %, waiting, GPU power
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert {"c=4", "c=64", "c=256"} <= set(texts)
    listed = [t for t in texts if re.match(r"\d+\. \d+\.\d s ", t)]
    assert any("decisive line: nccl: NCCL collective timed out" in t for t in listed)
    assert any("first failure" in t for t in listed) and any("died" in t for t in listed)
    assert any(t.startswith("GPU power W") and "top" in t for t in texts)


def test_a_long_run_with_hostile_marks_stays_small_and_escaped():
    ticks = iter(float(i) * 0.5 for i in range(10**6))
    tl = TimelineWriter(None, clock=lambda: next(ticks))
    for i in range(30_000):        # past the store's cap: thinned there, then again for the picture
        t = tl.now()
        tl.add("client", t, 0, float(i % 97), i % 13)
        tl.add("server", t, t, 4.0, float(i % 5), 0.5, None, 100.0)
        tl.add("gpu", t, 0, 90.0, 80_000.0, 500.0, 600.0, 2000.0, 2400.0, None)
    for i in range(3_000):
        tl.mark(float(i), "decisive line" if i % 2 else "level-start", f'level {i} <script>alert("x")</script>', i)
    saved = tl.to_json()
    from console.store.timeline import Timeline

    back = Timeline(path=RECORDED, wall0=0.0, series={n: s["points"] for n, s in saved["series"].items()},
                    strides={}, marks=saved["marks"], notes={})
    svg = render(chart_data(back, "long"), "a long run")
    assert len(svg.encode()) < 150_000
    root = ET.fromstring(svg)                     # well-formed: every text was escaped
    assert "<script>" not in svg
    assert all(len(p.get("points", "").split()) <= MAX_POINTS for p in root.findall(f"{SVG}polyline"))
    assert len(root.findall(f"{SVG}line")) <= MAX_MARKS + 40     # the marks drawn, and the axis ticks


def test_the_report_shows_the_timeline_of_a_run_that_recorded_one(tmp_path):
    path = saved_run(DIED, RUN_ID)
    shutil.copy(RECORDED, timeline_path(path))
    saved_run(DIED, "sweep-20261129-140000")          # a run from before timelines: no picture
    out = tmp_path / "findings.md"
    made = gpudeck("report", "-p", "local", "--out", str(out), "--offline", timeout=120)
    assert made.returncode == 0, made.stderr[-2000:]
    text = out.read_text()
    picture = tmp_path / f"{RUN_ID}-timeline.svg"
    assert f"![{RUN_ID} timeline]({picture.name})" in text
    assert f"gpudeck bench show {RUN_ID} --json" in text
    assert not (tmp_path / "sweep-20261129-140000-timeline.svg").exists()
    assert "sweep-20261129-140000-timeline" not in text
    ET.fromstring(picture.read_text())
