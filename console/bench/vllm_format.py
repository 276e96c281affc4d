"""One level as the result JSON vLLM's serving benchmark saves, so its tooling and plots read it.

The keys are vLLM's (`mean_ttft_ms`, `p99_itl_ms`, `request_throughput`,
`max_output_tokens_per_s`, ...); per-request lists (`ttfts`, `itls` in
seconds, `input_lens`, `output_lens`, `errors`) come from the run's
requests.jsonl. A closed-loop level at concurrency c is, in vLLM's terms,
request rate "inf" with max_concurrency c.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

METRICS = ("ttft", "tpot", "itl", "e2el")
NO_TEXTS = ("empty on purpose: gpudeck's client counts streamed tokens without decoding their text, "
            "so it keeps no generated text")


def level_file(path: Path, level: dict) -> Path:
    """`out.json` -> `out-c64.json` / `out-r4.json`: one file per level of a sweep."""
    rate = level.get("request_rate")
    tag = f"r{rate:g}" if rate is not None else f"c{level.get('concurrency')}"
    if rate is not None and level.get("max_concurrency"):
        tag += f"-c{level['max_concurrency']}"
    return path.with_name(f"{path.stem}-{tag}{path.suffix or '.json'}")


def _rows(doc: dict, index: int) -> list[dict]:
    path = doc.get("requests_path")
    if not path:
        return []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("level") == index:
            rows.append(row)
    return sorted(rows, key=lambda r: r.get("index", 0))


def level_result(doc: dict, level: dict) -> dict:
    index = next(i for i, lv in enumerate(doc["levels"]) if lv is level)
    rows = _rows(doc, index)
    rate = level.get("request_rate")
    workload = doc.get("workload") or {}
    out = {
        "date": time.strftime("%Y%m%d-%H%M%S", time.strptime(doc["started"][:19], "%Y-%m-%dT%H:%M:%S"))
        if doc.get("started") else None,
        "backend": "openai-chat" if doc.get("api") == "chat" else "openai",
        "endpoint_type": "openai-chat" if doc.get("api") == "chat" else "openai",
        "label": doc.get("run_id"),
        "model_id": doc.get("model"),
        "tokenizer_id": doc.get("model"),
        "num_prompts": level.get("num_prompts"),
        "request_rate": "inf" if rate is None or math.isinf(rate) else rate,
        "burstiness": level.get("burstiness", workload.get("burstiness", 1.0)),
        "max_concurrency": level.get("max_concurrency", level.get("concurrency")),
        "duration": level.get("duration_s"),
        "completed": level.get("completed"),
        "failed": level.get("failed"),
        "total_input_tokens": level.get("input_tokens"),
        "total_output_tokens": level.get("output_tokens"),
        "request_throughput": level.get("request_throughput"),
        "request_goodput": level.get("goodput"),
        "output_throughput": level.get("output_throughput"),
        "total_token_throughput": level.get("total_token_throughput"),
        "max_output_tokens_per_s": level.get("peak_output_throughput"),
        "max_concurrent_requests": level.get("max_concurrent_requests"),
        "input_lens": [r.get("input_tokens") or 0 for r in rows],
        "output_lens": [r.get("output_tokens") or 0 if r.get("ok") else 0 for r in rows],
        "ttfts": [(r["ttft_ms"] / 1000) if r.get("ok") and r.get("ttft_ms") is not None else 0.0 for r in rows],
        "itls": [[g / 1000 for g in r.get("itl_ms") or []] if r.get("ok") else [] for r in rows],
        "latencies": [(r["e2el_ms"] / 1000) if r.get("ok") and r.get("e2el_ms") is not None else 0.0 for r in rows],
        # vLLM's time a request waited in its client past its due time: not kept per request here
        "queue_times": [None for _ in rows],
        "rtfx": None,  # vLLM's inverse real-time factor, for audio input only
        # gpudeck's client counts the streamed chunks without decoding them (client.py), so it
        # keeps no text: the strings stay empty and the note says why
        "generated_texts": ["" for _ in rows],
        "generated_texts_note": NO_TEXTS,
        "errors": [r.get("error") or "" for r in rows],
    }
    for metric in METRICS:
        dist = level.get(f"{metric}_ms") or {}
        out[f"mean_{metric}_ms"] = dist.get("mean")
        out[f"median_{metric}_ms"] = dist.get("median")
        out[f"std_{metric}_ms"] = dist.get("std")
        for key, value in dist.items():
            if key.startswith("p") and key[1:].replace(".", "", 1).isdigit():
                out[f"{key}_{metric}_ms"] = value
    return out


def write_out(doc: dict, path: Path, out_format: str) -> None:
    """The run as `--out` asks: gpudeck's document in one file, or vLLM's result JSON, one file
    per level that ran (the file itself when only one did)."""
    from profiles.atomic import write_atomic

    if out_format != "vllm":
        write_atomic(path, json.dumps(doc, indent=2) + "\n", mode=0o644)
        return
    levels = [lv for lv in doc["levels"] if lv.get("status") != "skipped"]
    for level in levels:
        target = path if len(levels) == 1 else level_file(path, level)
        write_atomic(target, json.dumps(level_result(doc, level), indent=2) + "\n", mode=0o644)
