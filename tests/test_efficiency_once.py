"""Suggestions come once: efficiency once per run (when it is saved), a crash once whoever sees it first."""
from __future__ import annotations

from console.report import offer_run_efficiency
from profiles import store
from profiles.profile import profile_from_dict
from console.store.task_board import TaskBoard


def _profile(shared_dir):
    profile = profile_from_dict("h200-lab", {
        "transport": "local", "gpu": {"name": "H200", "count": 8},
        "model": {"config": str(shared_dir / "model-configs" / "GLM-5-NVFP4.json"),
                  "quant_config": str(shared_dir / "model-configs" / "GLM-5-NVFP4.hf_quant_config.json")}})
    store.save(profile)
    return profile


RUN = {"levels": [{"concurrency": c, "status": "ok", "output_throughput": tok}
                  for c, tok in ((1, 10.4), (2, 15.3), (10, 29.1), (64, 58.6))]
       + [{"concurrency": 256, "status": "failed", "output_throughput": None}]}


def test_one_suggestion_per_run_naming_its_worst_level(shared_dir, gpudeck_home):
    profile = _profile(shared_dir)
    text = offer_run_efficiency(profile, "sweep-20261130-0800", RUN)
    assert text is not None and "sweep-20261130-0800" in text and "4 of 4 levels below" in text
    board = TaskBoard.for_profile("h200-lab")
    assert [s.key for s in board.suggestions] == ["efficiency:sweep-20261130-0800"]
    # saved again (or a report written): nothing new
    assert offer_run_efficiency(profile, "sweep-20261130-0800", RUN) is None
    assert len(TaskBoard.for_profile("h200-lab").suggestions) == 1


def test_an_efficient_run_suggests_nothing(shared_dir, gpudeck_home):
    profile = _profile(shared_dir)
    TaskBoard.for_profile("h200-lab").set_threshold(0.001)
    assert offer_run_efficiency(profile, "sweep-x", RUN) is None
    assert TaskBoard.for_profile("h200-lab").suggestions == []


def test_a_crash_seen_by_the_server_tab_and_by_a_scan_is_offered_once(gpudeck_home):
    import json

    from console.store.suggest import offer_new
    from profiles.paths import profile_data_dir
    from console.store.suggest import suggest_from_crash

    doc = {"id": "20261130-082540-run_x", "class": "cuda-illegal-address", "config": "run_x",
           "time": "2026-11-30T08:25:40"}
    crashes = profile_data_dir("local") / "crashes"
    crashes.mkdir(parents=True)
    (crashes / "20261130-082540-run_x.json").write_text(json.dumps(doc))
    assert suggest_from_crash("local", doc, record=f"{doc['id']}.json") is not None  # named by its file
    assert offer_new("local") == []  # the store's scan names it by its id: the same crash, nothing new
    assert len(TaskBoard.for_profile("local").suggestions) == 1
