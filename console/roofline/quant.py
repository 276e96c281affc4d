"""Quantisation formats: bytes per parameter including their scales, and which modules keep their dtype.

A format stores each weight in a few bits plus scale factors shared by a
group of weights; the scales are what make NVFP4 cost 4.5 bits, not 4.
Exclusion lists (`exclude_modules`, `modules_to_not_convert`, `ignore`) are
matched against module paths with shell-style wildcards, except entries
written `re:PATTERN` (compressed-tensors), which are regular expressions
matched whole against the module name; a pattern that names a parent module
covers its children. A pattern that matches no module is reported, since it
usually means the names differ from the ones priced here.
"""
from __future__ import annotations

import fnmatch
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .components import Component
from .errors import RooflineError


@dataclass(frozen=True)
class QuantScheme:
    method: str                  # bf16, fp16, fp8, nvfp4, mxfp4, int4, int8
    weight_bytes: float          # per parameter of a converted matrix, scales included
    compute_dtype: str           # the tensor-core dtype its matmuls run in: bf16, fp8, fp4
    describe: str                # how the bytes were worked out, for the assumptions
    excluded: tuple[str, ...] = ()
    kv_dtype: str | None = None  # what the quant config says about the KV cache
    source: str = "--quant"
    group_size: int | None = None
    warnings: tuple[str, ...] = ()   # fields of the quant config read with a default or not read at all

    def is_excluded(self, path: str) -> bool:
        return _exclusion_regex(self.excluded).match(path) is not None

    def unmatched_patterns(self, paths: list[str]) -> list[str]:
        """Exclusion patterns that match none of these module paths."""
        return [p for p in self.excluded if not any(_exclusion_regex((p,)).match(path) for path in paths)]

    def bytes_per_param(self, comp: Component, original_bytes: float) -> float:
        """Bytes one parameter of this component occupies."""
        if not comp.linear or comp.role in ("router", "embedding"):
            return original_bytes
        if self.is_excluded(comp.path):
            return original_bytes
        return self.weight_bytes

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "weight_bytes_per_param": self.weight_bytes,
                "compute_dtype": self.compute_dtype, "describe": self.describe,
                "excluded_patterns": len(self.excluded), "kv_dtype": self.kv_dtype, "source": self.source}


# a config lists hundreds of patterns and unmatched_patterns asks for each alone: a cache smaller
# than the list compiles every one again on each call
@functools.lru_cache(maxsize=4096)
def _exclusion_regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """All patterns as one regex; a pattern naming a module also covers everything inside it."""
    if not patterns:
        return re.compile(r"(?!)")
    parts = []
    for p in patterns:
        p = p.strip()
        if p.startswith("re:"):
            body = p[3:]
            try:
                re.compile(body)
            except re.error:
                continue        # a broken regex matches nothing (reported as unmatched)
            parts.append(f"(?:{body})")
        else:
            parts.append(fnmatch.translate(p).removesuffix(r"\Z"))
    if not parts:
        return re.compile(r"(?!)")
    return re.compile("(?:" + "|".join(parts) + r")(?:\..*)?\Z", re.DOTALL)


# -- formats ------------------------------------------------------------------

def _bf16(name: str = "bf16") -> tuple[float, str, str]:
    return 2.0, "bf16", f"{name.upper()}: 2 B/param"


def _fp8(block: tuple[int, int] | None) -> tuple[float, str, str]:
    if block:
        n = block[0] * block[1]
        return 1.0 + 4.0 / n, "fp8", f"FP8 with an FP32 scale per {block[0]}x{block[1]} block = {1 + 4 / n:.5f} B/param"
    return 1.0, "fp8", "FP8 per-tensor scale: 1 B/param"


def _nvfp4(group: int = 16) -> tuple[float, str, str]:
    b = 0.5 + 1.0 / group
    return b, "fp4", f"NVFP4: 4-bit values + an FP8 scale per {group} (+ one FP32 per tensor) = {b:.4f} B/param"


def _mxfp4(group: int = 32) -> tuple[float, str, str]:
    b = 0.5 + 1.0 / group
    return b, "fp4", f"MXFP4: 4-bit values + an E8M0 scale per {group} = {b:.5f} B/param"


def _int4(group: int, kind: str, symmetric: bool = False) -> tuple[float, str, str]:
    if symmetric:   # no zero point: a 16-bit scale per group only
        b = 0.5 + 2.0 / group
        return b, "bf16", (f"INT4 {kind.upper()} symmetric group {group}: 4-bit + 16-bit scale per group "
                           f"= {b:.4f} B/param (matmuls in BF16)")
    b = 0.5 + 2.5 / group  # FP16 scale + 4-bit zero point per group
    return b, "bf16", f"INT4 {kind.upper()} group {group}: 4-bit + FP16 scale + 4-bit zero per group = {b:.4f} B/param (matmuls in BF16)"


def _int8() -> tuple[float, str, str]:
    return 1.0, "fp8", "INT8 per-channel: 1 B/param"


FORMATS = ("bf16", "fp16", "fp8", "fp8-block", "nvfp4", "mxfp4", "int4-awq", "int4-gptq", "int8")
_FORMAT_RE = re.compile(r"^(int4)(?:-(awq|gptq))?(?:-g(\d+))?$")


def scheme_from_name(name: str, excluded: tuple[str, ...] | None = None) -> QuantScheme:
    """A format given on the command line, e.g. `nvfp4`, `fp8`, `int4-awq-g64`."""
    key = name.strip().lower().replace("_", "-")
    if key in ("bf16", "bfloat16", "none"):
        (b, dt, text), method = _bf16("bf16"), "bf16"
    elif key in ("fp16", "float16"):
        (b, dt, text), method = _bf16("fp16"), "fp16"
    elif key in ("fp8", "fp8-tensor"):
        (b, dt, text), method = _fp8(None), "fp8"
    elif key in ("fp8-block", "fp8-128"):
        (b, dt, text), method = _fp8((128, 128)), "fp8"
    elif key == "nvfp4":
        (b, dt, text), method = _nvfp4(), "nvfp4"
    elif key == "mxfp4":
        (b, dt, text), method = _mxfp4(), "mxfp4"
    elif key in ("int8", "w8a8"):
        (b, dt, text), method = _int8(), "int8"
    elif m := _FORMAT_RE.match(key):
        kind = m.group(2) or "awq"
        (b, dt, text), method = _int4(int(m.group(3) or 128), kind), "int4"
    else:
        raise RooflineError(f"unknown quantisation format {name!r}: use one of {', '.join(FORMATS)} (int4 takes -g64 etc.)")
    if method in ("bf16", "fp16"):
        excluded = ()
    return QuantScheme(method, b, dt, text, excluded=("lm_head",) if excluded is None else excluded)


def scheme_from_config(qc: dict[str, Any], source: str) -> QuantScheme:
    """A `quantization_config` from config.json or the `quantization` table of hf_quant_config.json."""
    if not isinstance(qc, dict):
        raise RooflineError(f"{source}: quantization config must be an object")
    for key in ("weight_block_size", "group_size", "bits"):
        if isinstance(qc.get(key), bool) or (qc.get(key) is not None and not isinstance(qc.get(key), (int, list))):
            raise RooflineError(f"{source}: field '{key}' has a value of the wrong kind: {qc.get(key)!r}")
    method = str(qc.get("quant_method") or qc.get("quant_algo") or "").lower()
    if method == "modelopt" or (not qc.get("quant_method") and qc.get("quant_algo")):
        method = str(qc.get("quant_algo") or "").lower()
    excluded = _exclusions(qc)
    kv = _kv_from_config(qc)
    unknown = sorted(k for k in qc if k not in _KNOWN_FIELDS)
    if qc.get("dynamic"):
        raise RooflineError(f"{source}: per-module overrides ('dynamic') give some modules another format; "
                            "not modelled")
    if isinstance(qc.get("sparsity_config"), dict) and qc["sparsity_config"].get("format") not in (None, "dense"):
        raise RooflineError(f"{source}: 'sparsity_config' (format {qc['sparsity_config'].get('format')!r}) changes "
                            "the stored bytes; sparse weights are not modelled")
    group = qc.get("group_size")
    if method in ("nvfp4", "fp4"):
        b, dt, text = _nvfp4(int(group or 16))
        method = "nvfp4"
    elif method == "mxfp4":
        b, dt, text = _mxfp4()
    elif method == "fp8":
        block = qc.get("weight_block_size")
        b, dt, text = _fp8(tuple(block) if isinstance(block, list) and len(block) == 2 else None)
    elif method in ("awq", "gptq", "w4a16_awq", "int4_awq", "w4a16_gptq"):
        bits = int(qc.get("bits") or qc.get("w_bit") or 4)
        if bits != 4:
            raise RooflineError(f"{source}: {method} with {bits} bits is not supported (only 4)")
        group = int(group or qc.get("q_group_size") or 128)
        # GPTQ writes `sym`; AWQ's `zero_point` false means symmetric
        symmetric = bool(qc.get("sym")) if "sym" in qc else (qc.get("zero_point") is False)
        b, dt, text = _int4(group, "gptq" if "gptq" in method else "awq", symmetric)
        method = "int4"
    elif method == "compressed-tensors":
        scheme = _compressed_tensors(qc, source, excluded, kv)
        extra = tuple(f"{source}: unknown field '{k}' (not priced)" for k in unknown)
        return QuantScheme(**{**scheme.__dict__, "warnings": scheme.warnings + extra})
    elif not method:
        raise RooflineError(f"{source}: missing field 'quant_method' (or 'quant_algo') in the quantization config")
    else:
        raise RooflineError(f"{source}: quantisation method {method!r} is not supported; pass --quant FMT ({', '.join(FORMATS)})")
    if not excluded and "modules_to_not_convert" not in qc and "exclude_modules" not in qc and "ignore" not in qc:
        excluded = ("lm_head",)  # checkpoints without a list keep the head in its original dtype
    return QuantScheme(method, b, dt, text, excluded=excluded, kv_dtype=kv, source=source,
                       group_size=int(group) if group else None,
                       warnings=tuple(f"{source}: unknown field '{k}' (not priced)" for k in unknown))


# Fields of a compressed-tensors quantisation scheme that change no byte count.
_CT_WEIGHT_FIELDS = {"num_bits", "type", "symmetric", "group_size", "strategy", "block_structure", "dynamic",
                     "actorder", "observer", "observer_kwargs", "scale_dtype", "zp_dtype"}
_CT_GROUP_FIELDS = {"weights", "targets", "input_activations", "output_activations", "format"}


def _compressed_tensors(qc: dict[str, Any], source: str, excluded: tuple[str, ...], kv: str | None) -> QuantScheme:
    groups = qc.get("config_groups") or {}
    if not isinstance(groups, dict):
        raise RooflineError(f"{source}: 'config_groups' must be an object")
    schemes = [(name, g) for name, g in groups.items() if isinstance(g, dict) and g.get("weights")]
    if not schemes:
        raise RooflineError(f"{source}: missing field 'config_groups.*.weights' in the compressed-tensors config")
    shapes = {json.dumps(g["weights"], sort_keys=True) for _, g in schemes}
    if len(shapes) > 1:
        raise RooflineError(f"{source}: compressed-tensors 'config_groups' {', '.join(n for n, _ in schemes)} give "
                            "different weight formats to different modules; mixed schemes are not modelled")
    name, group_doc = schemes[0]
    weights = group_doc["weights"]
    if not isinstance(weights, dict):
        raise RooflineError(f"{source}: 'config_groups.{name}.weights' must be an object")
    warnings = [f"{source}: unknown field 'config_groups.{name}.weights.{k}' (not priced)"
                for k in sorted(set(weights) - _CT_WEIGHT_FIELDS)]
    warnings += [f"{source}: unknown field 'config_groups.{name}.{k}' (not priced)"
                 for k in sorted(set(group_doc) - _CT_GROUP_FIELDS)]
    targets = group_doc.get("targets")
    if targets not in (None, ["Linear"], "Linear"):
        warnings.append(f"{source}: 'config_groups.{name}.targets' {targets!r}: priced as if every linear layer "
                        "not in 'ignore' were converted")
    bits, kind, group = weights.get("num_bits"), weights.get("type"), weights.get("group_size")
    strategy = weights.get("strategy")
    if bits == 4 and kind == "float":
        b, dt, text = _nvfp4(int(group or 16))
        method = "nvfp4"
    elif bits == 8 and kind == "float":
        block = weights.get("block_structure")
        b, dt, text = _fp8(tuple(block) if strategy == "block" and isinstance(block, list) and len(block) == 2 else None)
        method = "fp8"
    elif bits == 4 and kind == "int":
        if group is None and strategy not in (None, "channel"):
            raise RooflineError(f"{source}: compressed-tensors int4 with strategy {strategy!r} and no 'group_size' "
                                "is not modelled")
        if group is None:
            warnings.append(f"{source}: int4 weights without 'group_size' (strategy {strategy!r}): group 128 assumed")
        b, dt, text = _int4(int(group or 128), "gptq", symmetric=weights.get("symmetric") is not False)
        method = "int4"
    elif bits == 8 and kind == "int":
        b, dt, text = _int8()
        method = "int8"
    else:
        raise RooflineError(f"{source}: compressed-tensors weights of {bits} bits {kind} are not supported")
    return QuantScheme(method, b, dt, text, excluded=excluded or ("lm_head",), kv_dtype=kv, source=source,
                       group_size=int(group) if group else None, warnings=tuple(warnings))


# Top-level fields of the quantisation configs read here or known to change no byte count.
_KNOWN_FIELDS = {
    "quant_method", "quant_algo", "weight_block_size", "activation_scheme", "fmt", "group_size", "bits", "w_bit",
    "q_group_size", "sym", "zero_point", "desc_act", "modules_to_not_convert", "exclude_modules", "ignore",
    "ignored_layers", "kv_cache_quant_algo", "kv_cache_scheme", "config_groups", "format", "quantization_status",
    "global_compression_ratio", "sparsity_config", "version", "producer", "damp_percent", "static_groups",
    "true_sequential", "model_name_or_path", "model_file_base_name", "checkpoint_format", "meta", "backend",
    "pack_dtype", "quantizer", "dynamic", "transform_config", "lm_head", "is_marlin_format", "modules_in_block_to_quantize",
    "damp_auto_increment", "mse", "v2", "v2_alpha", "act_group_aware", "hyb_act", "adapter", "modules_to_fuse",
    "do_fuse", "fuse_max_seq_len", "exllama_config", "use_exllama", "use_cuda_fp16", "batch_size", "tokenizer",
    "dataset", "cache_block_outputs", "max_input_length", "module_name_preceding_first_block", "pad_token_id",
}


def _exclusions(qc: dict[str, Any]) -> tuple[str, ...]:
    out: list[str] = []
    for key in ("exclude_modules", "modules_to_not_convert", "ignore", "ignored_layers"):
        value = qc.get(key)
        if isinstance(value, list):
            out.extend(str(v) for v in value)
    return tuple(out)


def _kv_from_config(qc: dict[str, Any]) -> str | None:
    algo = qc.get("kv_cache_quant_algo")
    if isinstance(algo, str) and algo:
        return kv_dtype_name(algo)
    scheme = qc.get("kv_cache_scheme")
    if isinstance(scheme, dict) and scheme.get("num_bits") == 8:
        return "fp8"
    return None


def load_quant_file(path: str | Path) -> QuantScheme:
    """`hf_quant_config.json` (modelopt) or a bare quantization_config JSON file."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise RooflineError(f"quant config not found: {path}") from None
    except (OSError, ValueError) as exc:
        raise RooflineError(f"cannot read quant config {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise RooflineError(f"{path}: expected a JSON object")
    inner = doc.get("quantization") or doc.get("quantization_config") or doc
    return scheme_from_config(inner, str(path))


# -- KV cache -------------------------------------------------------------------

KV_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5625}


def kv_dtype_name(name: str) -> str:
    key = name.strip().lower().replace("-", "_")
    if key in ("fp8", "fp8_e4m3", "fp8_e5m2", "e4m3", "e5m2"):
        return "fp8"
    if key in ("bfloat16", "bf16", "auto"):
        return "bf16"
    if key in ("float16", "fp16", "half"):
        return "fp16"
    if key in ("nvfp4", "fp4"):
        return "fp4"
    if key in KV_BYTES:
        return key
    raise RooflineError(f"unknown KV-cache dtype {name!r}: use bf16, fp16, fp8, int8 or fp4")


def kv_bytes(name: str) -> float:
    return KV_BYTES[kv_dtype_name(name)]
