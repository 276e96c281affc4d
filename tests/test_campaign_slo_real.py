"""The highest load under an SLO against real llama.cpp: one slot fails a TTFT SLO at four streams
(three of them queue behind the first), four slots hold it, and the campaign names the four-slot config."""
from __future__ import annotations

import json

import pytest

from tests.cli import gpudeck
from tests.realparts import free_port, start_llama_server
from tests.test_campaign import _nothing_left_running
from tests.test_campaign_noise import _script, box  # noqa: F401 - the fixture


def _one_request_ms(folder) -> float:
    """The slowest of three lone requests (16 tokens in, 64 out) on a one-slot server, in ms."""
    import time

    import httpx

    server = start_llama_server(folder / "calibrate.log", "-np", "1", "-t", "1", "-c", "2048")
    try:
        spent = []
        for _ in range(3):
            began = time.monotonic()
            httpx.post(f"{server.url}/v1/completions", json={"prompt": "one two three four five six seven eight "
                                                             "nine ten eleven twelve", "max_tokens": 64,
                                                             "ignore_eos": True}, timeout=120).raise_for_status()
            spent.append((time.monotonic() - began) * 1000)
        return max(spent)
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_one_slot_fails_the_slo_at_four_streams_four_slots_hold_it(box):  # noqa: F811
    folder, scripts = box
    port = free_port()
    for name, slots in (("np1", 1), ("np4", 4)):
        (scripts / f"{name}.sh").write_text(_script(port, slots))
        (scripts / f"{name}.sh").chmod(0o755)
    # the SLO in this host's own time: twice one request's end-to-end latency, measured now. One slot at four
    # streams makes the last request wait for three others (about three of those); four slots start all four
    slo_ms = 2 * _one_request_ms(folder)
    path = folder / "campaign.toml"
    path.write_text("[sweep]\nlevels = [1]\ninput_len = 16\noutput_len = 64\nprompts_per_stream = 2\nrepeats = 1\n\n"
                    '[[config]]\nname = "np1"\n\n[[config]]\nname = "np4"\n\n'
                    f"[slo]\nttft_p99_ms = {slo_ms:.0f}\nmax_concurrency = 4\nboundary_repeats = 1\n\n"
                    "[policy]\nready_timeout_s = 90\ngpu_idle_timeout_s = 5\n")
    out = gpudeck("campaign", "run", str(path), "-p", "noisy", "--foreground", "--json", timeout=560)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    _nothing_left_running("noisy")
    comp = doc["comparison"]
    loads = {r["cell"]: r["max_load"] for r in comp["results"]}
    searches = {c["name"]: c["rounds"][0]["slo_search"] for c in doc["cells"]}
    print(json.dumps(searches))
    assert searches["np1"]["first_fail"] is not None and searches["np1"]["first_fail"] <= 4, searches
    assert any(p["concurrency"] == 4 and not p["holds"] for p in searches["np1"]["probes"]) or \
        searches["np1"]["first_fail"] < 4, searches
    assert loads["np4"]["max_concurrency"] == 4 and searches["np4"]["capped"], searches
    assert comp["slo_answer"]["config"] == "np4"
    # a CPU host: no GPU power, so tokens per joule are unknown, with why, never 0
    energy = [lv["energy"] for c in doc["cells"] for lv in c["rounds"][0]["levels"]]
    assert energy and all(e["tok_per_j"] is None and e["avg_power_w"] is None and e["why"] for e in energy), energy
    assert comp["verdict"].startswith(f"most users within the SLO: np4 holds TTFT p99 ≤ {slo_ms:.0f} ms up to 4 streams")
