"""gpudeck's client beside vLLM's own request function, same server, same kind of workload.

vLLM's benchmark client is loaded from an unpacked vLLM wheel (its
`vllm/benchmarks/lib/endpoint_request_func.py`, which needs only aiohttp,
regex and tqdm), not copied here:

    pip download --no-deps vllm -d /tmp/w && unzip -q /tmp/w/vllm-*.whl 'vllm/benchmarks/*' -d /tmp/vsrc
    pip install --target /tmp/vdeps regex tqdm
    python tests/bench/vllm_side_by_side.py --vllm-src /tmp/vsrc --deps /tmp/vdeps [--url URL]

Without --url it starts the test llama.cpp server (tests/realparts.py).
Each level runs `--runs` times per client, alternating which client goes
first; every run gets its own unique prompts (exact length through the
server's tokenizer), so no run is served from another's prompt cache.
vLLM's metrics are computed with vLLM's definitions from its outputs:
output tokens from `usage` when its parser keeps them, else ITL count + 1
(where vLLM itself would run a tokenizer over the text).
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _alternate import alternate  # noqa: E402  (this script's folder)


def load_vllm_client(src: Path, deps: Path | None):
    if deps:
        sys.path.insert(0, str(deps))
    path = src / "vllm" / "benchmarks" / "lib" / "endpoint_request_func.py"
    spec = importlib.util.spec_from_file_location("vllm_endpoint_request_func", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _median(values):
    return statistics.median(values) if values else None


async def run_gpudeck(url: str, model: str, prompts: list[str], c: int, output_len: int) -> dict:
    from console.bench.client import StreamClient, request_body
    from console.bench.drive import drive
    from console.bench.metrics import summarize

    records = []
    bodies = [(i, request_body("completions", model, p, output_len)) for i, p in enumerate(prompts)]
    async with StreamClient(url) as client:
        start = time.perf_counter()
        await drive(client, bodies, c, records.append)
        duration = time.perf_counter() - start
    doc = summarize(records, duration)
    return {"ttft": doc["ttft_ms"]["median"], "tpot": doc["tpot_ms"]["median"], "itl": doc["itl_ms"]["median"],
            "e2el": doc["e2el_ms"]["median"], "ttft_p99": doc["ttft_ms"]["p99"], "out_tps": doc["output_throughput"],
            "failed": sum(1 for r in records if not r.ok),
            "tokens": doc["output_tokens"]}


async def run_vllm(vmod, url: str, model: str, prompts: list[str], c: int, output_len: int, input_len: int) -> dict:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=c, limit_per_host=c, ttl_dns_cache=300, use_dns_cache=True,
                                     keepalive_timeout=60, enable_cleanup_closed=True, force_close=False)
    outputs = []
    async with aiohttp.ClientSession(connector=connector, trust_env=True,
                                     timeout=aiohttp.ClientTimeout(total=6 * 3600)) as session:
        gate = asyncio.Semaphore(c)

        async def one(prompt: str):
            async with gate:
                inp = vmod.RequestFuncInput(prompt=prompt, api_url=f"{url}/v1/completions", prompt_len=input_len,
                                            output_len=output_len, model=model, ignore_eos=True)
                return await vmod.async_request_openai_completions(inp, session)

        start = time.perf_counter()
        outputs = await asyncio.gather(*(one(p) for p in prompts))
        duration = time.perf_counter() - start
    ok = [o for o in outputs if o.success]
    ttfts, tpots, itls, e2els, total = [], [], [], [], 0
    counted_by_usage = 0
    for o in ok:
        n = o.output_tokens or (len(o.itl) + 1)
        counted_by_usage += bool(o.output_tokens)
        total += n
        ttfts.append(o.ttft * 1000)
        if n > 1:
            tpots.append((o.latency - o.ttft) / (n - 1) * 1000)
        itls += [g * 1000 for g in o.itl]
        e2els.append(o.latency * 1000)
    ttfts.sort()
    return {"ttft": _median(ttfts), "tpot": _median(tpots), "itl": _median(itls), "e2el": _median(e2els),
            "ttft_p99": ttfts[min(len(ttfts) - 1, int(0.99 * (len(ttfts) - 1) + 0.5))] if ttfts else None,
            "out_tps": total / duration if ok else None, "failed": len(outputs) - len(ok), "tokens": total,
            "usage_counted": counted_by_usage,
            "errors": sorted({(o.error or "").strip().splitlines()[-1][:120] for o in outputs if not o.success})}


async def main_async(args) -> None:
    import httpx

    from console.bench.workload import Tokenizer, build_workload

    vmod = load_vllm_client(Path(args.vllm_src), Path(args.deps) if args.deps else None)
    levels = [int(x) for x in args.levels.split(",")]
    sizes = {c: max(2 * c, 8) for c in levels}
    total = sum(sizes[c] * args.runs * 2 for c in levels)
    async with httpx.AsyncClient(base_url=args.url, timeout=60) as control:
        model = (await control.get("/v1/models")).json()["data"][0]["id"]
        tok = Tokenizer(control, model)
        assert await tok.probe(), "the server must tokenize"
        work = await build_workload(tok, total, args.input_len, seed=1, total=total, run_seed=1)
    prompts = iter(work.prompts)
    print(f"server {args.url}, model {model}, in {args.input_len} ({work.method}) / out {args.output_len}, "
          f"ignore_eos; {args.runs} runs per level and client", flush=True)
    print(f"{'c':>3} {'client':<8} {'run':>3} {'TTFT p50':>9} {'TTFT p99':>9} {'TPOT p50':>9} {'ITL p50':>8} "
          f"{'E2EL p50':>9} {'out tok/s':>9} {'tokens':>6} {'fail':>4}", flush=True)
    for c in levels:
        for run, order in alternate(("gpudeck", "vllm"), args.runs):
            for name in order:
                batch = [next(prompts) for _ in range(sizes[c])]
                if name == "gpudeck":
                    r = await run_gpudeck(args.url, model, batch, c, args.output_len)
                else:
                    r = await run_vllm(vmod, args.url, model, batch, c, args.output_len, args.input_len)
                fmt = lambda v: "N/A" if v is None else f"{v:.1f}"  # noqa: E731
                print(f"{c:>3} {name:<8} {run + 1:>3} {fmt(r['ttft']):>9} {fmt(r['ttft_p99']):>9} "
                      f"{fmt(r['tpot']):>9} {fmt(r['itl']):>8} {fmt(r['e2el']):>9} {fmt(r['out_tps']):>9} "
                      f"{r['tokens']:>6} {r['failed']:>4}"
                      + (f"  usage kept {r['usage_counted']}/{sizes[c] - r['failed']}" if name == "vllm" else ""),
                      flush=True)
                for error in r.get("errors") or []:
                    print(f"      vllm error: {error}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vllm-src", required=True)
    parser.add_argument("--deps")
    parser.add_argument("--url")
    parser.add_argument("--levels", default="1,4,16")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=64)
    args = parser.parse_args()
    server = None
    if not args.url:
        from tests.realparts import start_llama_server

        server = start_llama_server(Path("/tmp") / "side-by-side-llama.log")
        args.url = server.url
    try:
        asyncio.run(main_async(args))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
