"""The simulator models what a campaign's flags change: CUDA-graph batch size, KV capacity, noise."""
from __future__ import annotations

import asyncio
import io

from console.sim.config import SimConfig
from console.sim.engine import Engine, Request
from console.sim.metrics import SimMetrics
from console.sim.sglang_log import LogWriter
from console.sim.timing import FixedTimer


def _engine(kv_tokens: int = 10_000, graph_max_bs: int | None = None, eager_s: float = 0.0,
            max_running: int = 64) -> tuple[Engine, io.StringIO]:
    out = io.StringIO()
    engine = Engine(FixedTimer(0.002), SimMetrics("m", kv_tokens, max_running), LogWriter(out), max_running,
                    kv_tokens, prefill_s=lambda tokens: 0.001, graph_max_bs=graph_max_bs, eager_step_s=eager_s)
    return engine, out


def test_steps_above_the_cuda_graph_batch_pay_the_eager_overhead():
    engine, _ = _engine(graph_max_bs=16, eager_s=0.05)
    assert engine.decode_step_s(16) == 0.002
    assert abs(engine.decode_step_s(17) - 0.052) < 1e-12
    plain, _ = _engine(graph_max_bs=None, eager_s=0.05)     # no graph size given: no eager steps either
    assert plain.decode_step_s(256) == 0.002


async def test_beyond_kv_capacity_requests_queue_and_running_ones_are_retracted():
    engine, log = _engine(kv_tokens=30)
    requests = [Request(prompt_tokens=10, output_tokens=8, finish_reason="length", pieces=lambda: "x")
                for _ in range(4)]
    most = 0
    task = asyncio.create_task(engine.run())
    for r in requests:
        engine.submit(r)

    async def drain(r: Request) -> int:
        nonlocal most
        n = 0
        while await r.out.get() is not None:
            n += 1
            most = max(most, len(engine.running))
        return n

    counts = await asyncio.wait_for(asyncio.gather(*(drain(r) for r in requests)), 20)
    engine.stop()
    await asyncio.wait_for(task, 5)
    assert counts == [8, 8, 8, 8]             # every request still gets all its tokens
    assert most <= 2                          # two fit the pool at once; the others waited in the queue
    assert engine.retracted >= 1 and "KV cache pool is full. Retract requests" in log.getvalue()


def test_noise_is_off_unless_asked_and_bounded():
    assert SimConfig().noise == 0.0
    bad = SimConfig(noise=0.9)
    try:
        bad.validate()
    except ValueError as exc:
        assert "--noise" in str(exc)
    else:
        raise AssertionError("a noise of 0.9 was accepted")
