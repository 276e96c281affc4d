"""A computed roofline: levels per batch, both bounds, efficiency and the assumptions behind them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .calibrate import dominant_term
from .setup import Setup
from .step import StepCosts, step_costs

DEFAULT_BATCHES = (1, 2, 10, 64, 256, 512)


@dataclass(frozen=True)
class Efficiency:
    batch: int
    measured_tok_s: float
    efficiency_pct: float            # measured / ideal
    efficiency_realistic_pct: float  # measured / realistic
    mbu_pct: float                   # bytes the measured rate moves / summed peak bandwidth
    mfu_pct: float                   # FLOPs the measured rate does / summed peak compute

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Roofline:
    """The bounds for one setup; `step_time_s(B)` answers for any batch, not only the listed ones."""

    def __init__(self, setup: Setup, batches: Iterable[int] = DEFAULT_BATCHES):
        self.setup = setup
        wanted = sorted({int(b) for b in batches} | {1})
        if wanted[0] < 1:
            from .errors import RooflineError

            raise RooflineError(f"batch sizes must be >= 1, got {wanted[0]}")
        self._cache: dict[int, StepCosts] = {}
        self.levels = [self.at(b) for b in wanted]

    def at(self, batch: int) -> StepCosts:
        if batch not in self._cache:
            self._cache[batch] = step_costs(self.setup, batch)
        return self._cache[batch]

    def step_time_s(self, batch: int, bound: str = "realistic") -> float:
        """Seconds per decode step at this batch: `ideal` or `realistic`."""
        costs = self.at(max(1, int(batch)))
        return costs.t_ideal_s if bound == "ideal" else costs.t_realistic_s

    def tok_s(self, batch: int, bound: str = "ideal") -> float:
        return max(1, int(batch)) / self.step_time_s(batch, bound)

    @property
    def single_stream_ideal(self) -> float:
        return self.at(1).tok_s_ideal

    @property
    def single_stream_realistic(self) -> float:
        return self.at(1).tok_s_realistic

    def efficiency(self, measured_tok_s: float, batch: int = 1) -> Efficiency:
        costs = self.at(batch)
        steps_per_s = measured_tok_s / batch
        return Efficiency(
            batch=batch,
            measured_tok_s=measured_tok_s,
            efficiency_pct=100.0 * measured_tok_s / costs.tok_s_ideal,
            efficiency_realistic_pct=100.0 * measured_tok_s / costs.tok_s_realistic,
            mbu_pct=100.0 * steps_per_s * costs.t_ideal_mem_s,
            mfu_pct=100.0 * steps_per_s * costs.t_ideal_compute_s,
        )

    # -- what the operator reads ----------------------------------------------
    def assumptions(self) -> dict[str, Any]:
        s = self.setup
        f, g, t, knobs = s.facts, s.gpu, s.totals, s.knobs
        weights_1 = self.at(1).ideal_weight_bytes
        out: dict[str, Any] = {
            "weights_from": self.weights_from() + (f" ({s.witness.source})" if s.witness is not None else ""),
            "gpu": f"{s.count} x {g.name} ({g.bandwidth_gbs / 1000:.2f} TB/s, {g.memory_gb:g} GB each; {g.interconnect})",
            "gpu_bandwidth_from": g.figures_from.get("bandwidth_gbs", g.source),
            "realistic_bandwidth": _realistic_bandwidth(g),
            "realistic_tflops": _realistic_tflops(g),
            "parallel": f"TP{s.tp}" + (f" EP{s.ep}" if s.ep > 1 else "") + (f" x DP{s.dp}" if s.dp > 1 else ""),
            "context_tokens": s.context,
            "weights_quant": s.scheme.describe if s.scheme else "the GGUF's tensors in their own ggml types" if f.gguf else (
                f"{f.weight_dtype_bytes} B/param ({f.serving_dtype} as served, unquantised; "
                f"checkpoint {f.checkpoint_dtype}; {f.serving_dtype_source})"),
            "weights_quant_source": s.scheme.source if s.scheme else "GGUF header" if f.gguf else "config.json dtype",
            "kv_cache_dtype": s.kv_dtype,
            "kv_cache_source": "--kv-dtype" if s.kv_dtype and s.scheme and s.kv_dtype != s.scheme.kv_dtype else (
                s.scheme.source if s.scheme and s.scheme.kv_dtype else f"model dtype ({f.serving_dtype})"),
            "ideal_weights_gb_per_token": round(weights_1 / 1e9, 3),
            "embedding_table_gb": round(t.embedding_bytes / 1e9, 3),
            "input_embedding_read": ("the whole table every step (embedding_table_read true)" if knobs["embedding_table_read"]
                                     else "one row per sequence per step (embedding_table_read false)"),
            "tied_embeddings": f"{'yes' if f.tied_embeddings else 'no'} ({f.tied_source})",
            "mtp_layers": f"{f.mtp_layers_excluded} excluded (not run in plain decode)" if f.mtp_layers_excluded else "none",
            "moe_experts_touched": "E·(1−(1−k/E)^B) distinct experts per MoE layer" if f.num_experts else "dense model",
            "ideal_bound": "all bytes of a step over the summed bandwidth of every GPU, no communication",
            "realistic_bound": "busiest GPU of one TP group (replicated parts included), max(memory, compute) + communication + overhead",
            "allreduce_formula": "2(N−1)·α + 2(N−1)/N·S/β per allreduce, S = batch × hidden × activation bytes",
            "weights_gb_per_gpu_stored": round(t.stored_bytes_gpu / 1e9, 2),
            "fits_in_memory": t.stored_bytes_gpu / 1e9 <= g.memory_gb,
        }
        if t.bf16_kept_bytes:
            kept = ", ".join(sorted(t.bf16_kept_paths)[:8])
            out["kept_unquantised"] = (f"{t.bf16_kept_bytes / 1e9:.1f} GB of linear weights stay in their original dtype "
                                       f"(quant config excludes them: {kept})")
        kinds = f.attention.kinds
        if kinds and any(k != "attention" for k in kinds):
            names = {"attention": "attention (KV cache)", "linear": "Gated DeltaNet linear attention",
                     "mamba": "Mamba-2", "none": "feed-forward only"}
            out["layer_mixers"] = ", ".join(f"{kinds.count(k)} {names[k]}" for k in ("attention", "linear", "mamba", "none")
                                            if kinds.count(k))
            out["recurrent_state_mb_per_seq"] = round(f.attention.state_elems * s.state_bytes / 1e6, 2)
        windowed = [w for w in f.attention.windows if w]
        if windowed:
            out["sliding_window_layers"] = (f"{len(windowed)} of {f.num_layers} layers keep at most "
                                            f"{max(windowed)} tokens of KV")
        if f.attention.index_topk:
            out["sparse_attention"] = (f"indexer reads every token's key; attention reads at most "
                                       f"{f.attention.index_topk} tokens")
        towers = _other_towers(s)
        if towers:
            out["other_towers"] = towers
        if f.checkpoint:
            out["checkpoint"] = f.checkpoint
        out.update({k: v for k, v in knobs.items()})
        return out

    def warnings(self) -> list[str]:
        """Every number whose input was defaulted, and every disagreement found: never a silent number."""
        s = self.setup
        out = list(s.facts.warnings) + list(s.warnings)
        witness = getattr(s, "witness", None)
        if witness is not None:
            out += list(witness.disagreements)
        return list(dict.fromkeys(out))

    def assumption_notes(self) -> list[str]:
        """What the operator accepted knowingly, and what the model leaves out on purpose."""
        return list(self.setup.facts.assumptions)

    def weights_from(self) -> str:
        """Where the weight bytes come from: the checkpoint's headers, or the config alone."""
        witness = getattr(self.setup, "witness", None)
        return "from the checkpoint" if witness is not None else "from config.json only"

    def to_json(self, measured: Efficiency | None = None, calibration: Any = None,
                calibration_from: str | None = None) -> dict[str, Any]:
        s = self.setup
        doc: dict[str, Any] = {
            "model": s.facts.summary(),
            "gpu": s.gpu.to_json(),
            "count": s.count,
            "tp": s.tp,
            "ep": s.ep,
            "dp": s.dp,
            "quant": s.scheme.to_json() if s.scheme else None,
            "kv_dtype": s.kv_dtype,
            "context": s.context,
            "ideal": {"single_stream_tok_s": self.single_stream_ideal,
                      "single_stream_ms": self.at(1).t_ideal_s * 1e3},
            "realistic": {"single_stream_tok_s": self.single_stream_realistic,
                          "single_stream_ms": self.at(1).t_realistic_s * 1e3},
            "levels": [lv.to_json() for lv in self.levels],
            "assumptions": self.assumptions(),
            "warnings": self.warnings(),
            "assumption_notes": self.assumption_notes(),
            "weights_from": self.weights_from(),
            "checkpoint_witness": s.witness.to_json() if s.witness is not None else None,
        }
        if calibration is not None:
            doc["calibration"] = {**calibration.to_json(), "run": calibration_from,
                                  "dominant": dominant_term(self, calibration, 1),
                                  "predicted": [{"batch": lv.batch, "tok_s": calibration.tok_s(self, lv.batch)}
                                                for lv in self.levels]}
        if measured is not None:
            doc["measured"] = measured.to_json()
            doc["efficiency_pct"] = measured.efficiency_pct
            doc["efficiency_realistic_pct"] = measured.efficiency_realistic_pct
            doc["mbu_pct"] = measured.mbu_pct
            doc["mfu_pct"] = measured.mfu_pct
        return doc


def _realistic_bandwidth(g) -> str:
    bw, source = g.realistic_bandwidth_gbs()
    return f"{bw:,.0f} GB/s ({bw / g.bandwidth_gbs:.0%} of the {g.bandwidth_gbs:,.0f} datasheet): {source}"


def _realistic_tflops(g) -> str:
    bf16 = g.realistic_tflops("bf16")
    peak = g.peak_tflops("bf16")[0]
    if g.achievable_tflops:
        return f"bf16 {bf16:,.0f} TFLOP/s ({bf16 / peak:.0%} of {peak:,.0f} dense), as measured; other dtypes scaled alike"
    return f"bf16 {peak:,.0f} TFLOP/s: the datasheet (no measurement kept for this chip)"


def _other_towers(s) -> str | None:
    """The vision/audio towers (and MTP layers) the checkpoint holds beside the language model decode reads:
    from the shard headers when they are there, else estimated from the tower's own config; not per token."""
    w, f = s.witness, s.facts
    per_image = "read once per image or clip, not per token"
    if w is not None and w.left_out.get("other_towers"):
        return f"{w.left_out['other_towers'] / 1e9:.2f} GB from the checkpoint's headers ({per_image})"
    if not f.tower_params:
        return None
    parts = []
    for key, params in f.tower_params.items():
        if params is None:
            parts.append(f"{key}: size unknown (its config names the tower without its shape)")
        else:
            parts.append(f"{key}: {params / 1e9:.2f}B params, about {params * f.weight_dtype_bytes / 1e9:.2f} GB "
                         "(estimated from its config)")
    return "; ".join(parts) + f" ({per_image})"
