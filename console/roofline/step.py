"""The cost of one decode step at batch B: bytes read, FLOPs, communication, and the two bounds.

Ideal: the whole step's bytes spread perfectly over the summed bandwidth of
every GPU, no communication (the number a hand calculation gives).
Realistic: the busiest GPU of one TP group, with what TP replicates, at the
bandwidth and GEMM rate the chip reaches as measured (the catalogue's
`achievable` figures; the datasheet where none is kept), max(memory,
compute) plus TP allreduces / EP all-to-alls and a fixed step overhead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .setup import Setup


def experts_touched(num_experts: int, k: int, batch: float) -> float:
    """Expected distinct experts B tokens route to: E·(1 − (1 − k/E)^B)."""
    if not num_experts or batch <= 0:
        return 0.0
    return num_experts * (1.0 - (1.0 - k / num_experts) ** batch)


@dataclass(frozen=True)
class StepCosts:
    batch: int
    # ideal
    ideal_weight_bytes: float
    ideal_kv_bytes: float
    ideal_flops: float
    t_ideal_mem_s: float
    t_ideal_compute_s: float
    # realistic (busiest GPU)
    gpu_weight_bytes: float
    gpu_kv_bytes: float
    t_mem_s: float
    t_compute_s: float
    t_allreduce_s: float
    t_alltoall_s: float
    t_overhead_s: float
    experts_touched: float | None

    @property
    def t_ideal_s(self) -> float:
        return max(self.t_ideal_mem_s, self.t_ideal_compute_s)

    @property
    def t_comm_s(self) -> float:
        return self.t_allreduce_s + self.t_alltoall_s

    @property
    def t_realistic_s(self) -> float:
        return max(self.t_mem_s, self.t_compute_s) + self.t_comm_s + self.t_overhead_s

    @property
    def tok_s_ideal(self) -> float:
        return self.batch / self.t_ideal_s

    @property
    def tok_s_realistic(self) -> float:
        return self.batch / self.t_realistic_s

    @property
    def bound(self) -> str:
        """The largest term of the realistic step: memory, compute or communication."""
        terms = {"memory": self.t_mem_s, "compute": self.t_compute_s, "communication": self.t_comm_s}
        return max(terms, key=lambda k: terms[k])

    @property
    def bound_detail(self) -> str:
        kind = self.bound
        if kind == "memory":
            return "memory: weights" if self.gpu_weight_bytes >= self.gpu_kv_bytes else "memory: KV cache"
        if kind == "communication":
            return "communication: allreduce" if self.t_allreduce_s >= self.t_alltoall_s else "communication: all-to-all"
        return "compute"

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "tok_s_ideal": self.tok_s_ideal,
            "tok_s_realistic": self.tok_s_realistic,
            "t_ideal_ms": self.t_ideal_s * 1e3,
            "t_realistic_ms": self.t_realistic_s * 1e3,
            "t_mem_ms": self.t_mem_s * 1e3,
            "t_compute_ms": self.t_compute_s * 1e3,
            "t_comm_ms": self.t_comm_s * 1e3,
            "t_allreduce_ms": self.t_allreduce_s * 1e3,
            "t_alltoall_ms": self.t_alltoall_s * 1e3,
            "bound": self.bound,
            "bound_detail": self.bound_detail,
            "ideal_bytes_per_step_gb": (self.ideal_weight_bytes + self.ideal_kv_bytes) / 1e9,
            "ideal_weight_gb": self.ideal_weight_bytes / 1e9,
            "ideal_kv_gb": self.ideal_kv_bytes / 1e9,
            "gpu_bytes_per_step_gb": (self.gpu_weight_bytes + self.gpu_kv_bytes) / 1e9,
            "flops_per_step_tflop": self.ideal_flops / 1e12,
            "experts_touched": self.experts_touched,
        }


def kv_per_sequence(setup: Setup, per_gpu: bool) -> tuple[float, float]:
    """(bytes read, attention FLOPs) for one sequence at the setup's context, all layers."""
    facts, att, ctx = setup.facts, setup.facts.attention, setup.context
    kvb = setup.kv_bytes
    tp = setup.tp
    total_bytes = total_flops = 0.0
    if att.state_elems:  # linear-attention / Mamba state: fixed per sequence, split across TP ranks
        total_bytes += att.state_elems * setup.state_bytes / (tp if per_gpu else 1)
    for layer in range(facts.num_layers):
        if not att.is_attention(layer):
            continue
        window = att.windows[layer] if layer < len(att.windows) else None
        tokens = min(ctx, window) if window else ctx
        if att.kind == "mla":
            attended = min(tokens, att.index_topk) if att.index_topk else tokens
            latent = (att.kv_lora_rank + att.rope_dim) * kvb * attended  # replicated on every TP rank
            index = att.index_head_dim * kvb * tokens if att.index_heads else 0.0
            total_bytes += latent + index
            heads = att.num_heads / tp if per_gpu else att.num_heads
            flops = 2.0 * heads * attended * (2 * att.kv_lora_rank + att.rope_dim)
            flops += 2.0 * att.index_heads * att.index_head_dim * tokens
            total_flops += flops
        else:
            kv_heads = att.num_kv_heads
            if per_gpu:
                kv_heads = kv_heads / tp if kv_heads >= tp else 1
            total_bytes += 2.0 * kv_heads * att.head_dim * kvb * tokens
            heads = att.num_heads / tp if per_gpu else att.num_heads
            total_flops += 2.0 * 2.0 * heads * att.head_dim * tokens
    return total_bytes, total_flops


def step_costs(setup: Setup, batch: int) -> StepCosts:
    if batch < 1:
        raise ValueError("batch must be >= 1")
    facts, gpu, t, knobs = setup.facts, setup.gpu, setup.totals, setup.knobs
    n = setup.count
    bw = gpu.bandwidth_gbs * 1e9
    E, k = facts.num_experts, facts.experts_per_token

    # ideal: the whole step once, over every GPU
    touched_all = experts_touched(E, k, batch)
    ideal_w = t.fixed_bytes_all + sum(b * touched_all for b in t.expert_layers) + batch * t.embedding_row_bytes
    kv_seq_all, att_flops_all = kv_per_sequence(setup, per_gpu=False)
    ideal_kv = batch * kv_seq_all
    ideal_flops = batch * (sum(t.flops_per_token.values()) + att_flops_all)
    t_ideal_mem = (ideal_w + ideal_kv) / (n * bw)
    t_ideal_compute = _compute_time(batch, t.flops_per_token, att_flops_all, gpu, n, 1.0)

    # realistic: the busiest GPU of one TP group, serving its share of the batch
    b_rep = math.ceil(batch / setup.dp)
    touched_rep = experts_touched(E, k, b_rep)
    gpu_w = t.fixed_bytes_gpu + sum(b * touched_rep for b in t.expert_layers) / setup.tp + b_rep * t.embedding_row_bytes
    kv_seq_gpu, att_flops_gpu = kv_per_sequence(setup, per_gpu=True)
    gpu_kv = b_rep * kv_seq_gpu
    real_bw = gpu.realistic_bandwidth_gbs()[0] * 1e9    # the chip as measured, where a measurement is kept
    t_mem = (gpu_w + gpu_kv) / (real_bw * float(knobs["mem_efficiency"]))
    t_compute = _compute_time(b_rep, t.flops_per_token_gpu, att_flops_gpu, gpu, 1, float(knobs["compute_efficiency"]),
                              realistic=True)
    t_ar, t_a2a = _communication(setup, b_rep)
    return StepCosts(
        batch=batch,
        ideal_weight_bytes=ideal_w, ideal_kv_bytes=ideal_kv, ideal_flops=ideal_flops,
        t_ideal_mem_s=t_ideal_mem, t_ideal_compute_s=t_ideal_compute,
        gpu_weight_bytes=gpu_w, gpu_kv_bytes=gpu_kv,
        t_mem_s=t_mem, t_compute_s=t_compute, t_allreduce_s=t_ar, t_alltoall_s=t_a2a,
        t_overhead_s=float(knobs["step_overhead_us"]) * 1e-6,
        experts_touched=touched_all if E else None,
    )


def _compute_time(batch: float, flops_by_dtype: dict[str, float], att_flops: float, gpu, n: int, eff: float,
                  realistic: bool = False) -> float:
    """Seconds of tensor-core work: at the datasheet's dense peak (ideal) or the chip's measured rate (realistic)."""
    def rate(dtype: str) -> float:
        return gpu.realistic_tflops(dtype) if realistic else gpu.peak_tflops(dtype)[0]

    seconds = 0.0
    for dtype, flops in flops_by_dtype.items():
        seconds += batch * flops / (n * rate(dtype) * 1e12 * eff)
    peak_bf16 = rate("bf16")
    seconds += batch * att_flops / (n * peak_bf16 * 1e12 * eff)
    return seconds


def allreduce_time(n: int, size_bytes: float, alpha_s: float, beta_bps: float) -> float:
    """Ring allreduce: 2(N−1)·α + 2(N−1)/N·S/β."""
    if n <= 1:
        return 0.0
    return 2 * (n - 1) * alpha_s + 2 * (n - 1) / n * size_bytes / beta_bps


def alltoall_time(n: int, size_bytes: float, alpha_s: float, beta_bps: float) -> float:
    """All-to-all of S bytes per GPU: (N−1)·α + (N−1)/N·S/β."""
    if n <= 1:
        return 0.0
    return (n - 1) * alpha_s + (n - 1) / n * size_bytes / beta_bps


def _communication(setup: Setup, b_rep: int) -> tuple[float, float]:
    """(allreduce seconds, all-to-all seconds) per step for one TP group."""
    facts, knobs = setup.facts, setup.knobs
    tp, ep = setup.tp, setup.ep
    act = float(knobs["activation_bytes"])
    alpha, beta = setup.alpha_s, setup.beta_bps
    per_layer = int(knobs["allreduces_per_layer"])
    hidden_bytes = b_rep * facts.hidden_size * act
    one_ar = allreduce_time(tp, hidden_bytes, alpha, beta)
    moe_layers = facts.moe_layers if ep > 1 else 0
    n_ar = per_layer * facts.num_layers - moe_layers  # with EP the MoE reduce becomes all-to-alls
    t_ar = n_ar * one_ar
    # the output head is split by vocabulary: gather the logits once per step
    t_ar += alltoall_time(tp, b_rep * facts.vocab_size * act, alpha, beta)
    t_a2a = 0.0
    if ep > 1:
        dispatch = (b_rep / ep) * facts.experts_per_token * facts.hidden_size * act
        t_a2a = moe_layers * 2 * alltoall_time(ep, dispatch, alpha, beta)
    return t_ar, t_a2a
