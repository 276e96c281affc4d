"""The roofline: the fastest a model can decode on given GPUs, and how close a measurement gets.

Python API (the CLI, the Roofline pane and the simulator use only this):

    from console import roofline

    facts = roofline.load_model("config.json")            # ModelFacts; RooflineError names a missing field
    gpu = roofline.find_gpu("NVIDIA RTX PRO 6000 Blackwell Server Edition")
    quant = roofline.load_quant_file("hf_quant_config.json")   # or a name: "nvfp4", "fp8", "int4-awq-g128"
    r = roofline.compute(facts, gpu, count=8, tp=8, ep=1, quant=quant, kv_dtype=None,
                         context=4096, batches=(1, 2, 10, 64, 256, 512),
                         assumptions={"allreduce_alpha_us": 10})   # any key of DEFAULT_KNOBS

    r.single_stream_ideal, r.single_stream_realistic     # tok/s at batch 1
    r.levels                                             # [StepCosts]: .tok_s_ideal, .tok_s_realistic,
                                                         #   .t_mem_s, .t_compute_s, .t_comm_s, .bound
    r.step_time_s(batch, bound="realistic" | "ideal")    # seconds per decode step, any batch
    r.tok_s(batch, bound="ideal")
    r.efficiency(measured_tok_s, batch=1)                # Efficiency: efficiency_pct, mbu_pct, mfu_pct
    r.assumptions()                                      # key -> value, every number the bounds rest on
    r.to_json(measured=None)                             # the CLI's stable JSON document

Calibration against a finished sweep (console/roofline/calibrate.py):

    from console.roofline.calibrate import calibrate, fit, dominant_term
    cal = fit(r, [(1, 0.0963), (2, 0.0984), (10, 0.105)])   # (concurrency, TPOT seconds[, the server's batch])
    cal.eta, cal.overhead_s, cal.r2, cal.tok_s(r, 64), dominant_term(r, cal, 1)
    outcome = calibrate(r, points)    # .calibration, or None and .reason: a line that misses its own points

Every key of a config is accounted for (config_keys.py): read by the model,
known irrelevant, accepted with `load_model(path, assume_ignored=("KEY",))`,
or the load is refused naming it. `facts.warnings` lists every number taken
from a default; `r.warnings()` adds the quant config's and the checkpoint's.
A checkpoint beside a local config.json, or `compute(..., checkpoint=headers)`
with headers from `shard_headers.read_local` / `remote_headers.read_remote(host, dir)`, is the
witness (checkpoint.py): its shard headers' bytes win, and `r.weights_from()`
says "from the checkpoint" or "from config.json only".

The checkpoint comes first: with its headers (or its index) in hand, config keys
about weight shapes are settled by the tensors (`load_model(path, witnessed=True)`),
and keys that cannot change bytes never block (config_keys.harmless_kind). A
`.gguf` path is read as llama.cpp's header (gguf_header.py, gguf_model.py).
Weights are priced in the dtype the server loads (serving_dtype.py: a float32
checkpoint at 16 bits under `--dtype auto`); other towers and MTP layers are
named beside the decode figure (towers.py). The realistic bound uses the
chip as measured where the catalogue keeps it (`achievable`, probe.py).

`facts.total_params`, `facts.active_params` (one token's decode reads: the
input table left out, the output head counted), `facts.active_params_with_embedding`
and `facts.active_params_without_embeddings` cover the makers' conventions.

The ideal bound is what hand calculations give: every byte a step reads
(weights, with the experts a batch touches, plus the KV cache) over the summed
bandwidth of all GPUs, with no communication. The realistic bound takes the
busiest GPU of one TP group, counts what TP replicates, adds allreduce /
all-to-all time and a step overhead. A step reads one row of the input
embedding per sequence (`embedding_table_read` counts the whole table, the
old habit). Nothing here imports Textual.
"""
from __future__ import annotations

from typing import Any, Iterable

from .catalogue import GPUSpec, find_gpu, load_catalogue, user_catalogue_path
from .errors import RooflineError
from .model_facts import ModelFacts, facts_from_config, load_model
from .quant import QuantScheme, load_quant_file, scheme_from_config, scheme_from_name
from .result import DEFAULT_BATCHES, Efficiency, Roofline
from .setup import DEFAULT_KNOBS, Setup
from .step import StepCosts, allreduce_time, experts_touched

__all__ = [
    "GPUSpec", "ModelFacts", "QuantScheme", "Roofline", "RooflineError", "Efficiency", "StepCosts", "Setup",
    "DEFAULT_BATCHES", "DEFAULT_KNOBS", "compute", "find_gpu", "load_catalogue", "load_model",
    "facts_from_config", "load_quant_file", "scheme_from_name", "scheme_from_config", "experts_touched",
    "allreduce_time", "user_catalogue_path",
]


def compute(facts: ModelFacts, gpu: GPUSpec | str, count: int, tp: int | None = None, ep: int | None = None,
            quant: QuantScheme | str | None = None, kv_dtype: str | None = None, context: int = 4096,
            batches: Iterable[int] = DEFAULT_BATCHES, assumptions: dict[str, Any] | None = None,
            checkpoint: Any = None) -> Roofline:
    """Both bounds for a model on `count` GPUs; tp defaults to count, ep to 1, quant to the model's own config.

    `checkpoint` (shard_headers.CheckpointHeaders, e.g. from `read_remote`) makes the checkpoint the
    witness; a checkpoint beside a local config.json is used without asking."""
    if isinstance(gpu, str):
        gpu = find_gpu(gpu)
    setup = Setup.build(facts, gpu, count, tp=tp, ep=ep, quant=quant, kv_dtype=kv_dtype,
                        context=context, assumptions=assumptions, checkpoint=checkpoint)
    return Roofline(setup, batches)
