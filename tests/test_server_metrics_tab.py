"""The Server tab shows the launched server's own `/metrics` line, driven with Pilot on the demo:
its simulated sglang serves sglang's `sglang:` series, and the line says it is simulated; once
the server is stopped the line keeps its last values, marked STALE."""
from __future__ import annotations


import pytest
import httpx

from screens.app import GpudeckApp
from screens.confirm import Confirm
from tests.harness import wait_until


@pytest.mark.slow
async def test_the_server_tab_shows_the_live_sglang_series(demo_world, monkeypatch):
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        server = app.panes["server"]
        line = server.query_one("#metrics")
        await pilot.press("2")
        await wait_until(pilot, lambda: len(server.configs) == 3, what="configs")
        assert server.selected == "run_tp8_cds16" and not line.display  # never launched: no line
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), what="the launch confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: line.display and "running" in str(line.render()), what="the metrics line")
        shown = str(line.render())
        # nothing sent yet: the latency histograms are empty, and sglang has no preemption counter
        assert shown == ("sglang /metrics SIMULATED · running 0 · waiting 0 · KV 0% · preempt N/A · "
                         "TTFT N/A · ITL N/A"), shown

        async with httpx.AsyncClient(timeout=60) as client:
            reply = await client.post(f"http://127.0.0.1:{demo_world.port}/v1/completions",
                                      json={"model": "zai-org/GLM-5-NVFP4", "prompt": "hello", "max_tokens": 4})
        assert reply.status_code == 200
        await wait_until(pilot, lambda: "TTFT N/A" not in str(line.render()), what="the request's TTFT")
        assert " ms · ITL " in str(line.render()) and "STALE" not in str(line.render())

        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), what="the kill confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: "STALE" in str(line.render()), what="the STALE marker")
        await wait_until(pilot, lambda: server.latest["run_tp8_cds16"].state == "stopped", what="the stop")
        await wait_until(pilot, lambda: "server stopped" in str(line.render()), what="the stop named on the line")
        # the last reading's values stay on the line (the request's latency included), marked STALE
        stale = str(line.render())
        assert stale.startswith("sglang /metrics SIMULATED · running ") and " ms · ITL " in stale, stale
