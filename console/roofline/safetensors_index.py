"""Real tensor facts from `model.safetensors.index.json` and, when present, the shard headers.

The index gives the checkpoint's byte size and every tensor name; a shard's
own header (8-byte length, then JSON) gives each tensor's dtype and shape.
Reading headers costs a few kilobytes per shard, never the weights.
"""
from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

_INDEX = "model.safetensors.index.json"
# Bytes per stored element; packed 4-bit formats are stored as U8 (two values per byte).
_ELEMENT_BYTES = {"F64": 8, "F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "F8_E5M2": 1,
                  "F8_E8M0": 1, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def checkpoint_facts(model_dir: Path, num_layers: int) -> dict[str, Any] | None:
    """Size and tensor count of the checkpoint beside a config, without MTP layers; None if absent."""
    index_path = model_dir / _INDEX
    if not index_path.is_file():
        single = model_dir / "model.safetensors"
        return _from_headers({single.name: single}, num_layers, None) if single.is_file() else None
    try:
        index = json.loads(index_path.read_text())
        weight_map: dict[str, str] = index["weight_map"]
        total_size = index.get("metadata", {}).get("total_size")
    except (OSError, ValueError, KeyError, TypeError):
        return {"index": str(index_path), "error": "unreadable safetensors index"}
    mtp = re.compile(r"^model\.layers\.(\d+)\.")
    mtp_names = [n for n in weight_map if (m := mtp.match(n)) and int(m.group(1)) >= num_layers]
    facts: dict[str, Any] = {
        "index": str(index_path),
        "total_bytes": total_size,
        "tensors": len(weight_map),
        "mtp_tensors": len(mtp_names),
    }
    shards = {name: model_dir / name for name in set(weight_map.values())}
    if all(p.is_file() for p in shards.values()):
        facts.update(_from_headers(shards, num_layers, facts) or {})
    return facts


def _from_headers(shards: dict[str, Path], num_layers: int, facts: dict[str, Any] | None) -> dict[str, Any] | None:
    """Sum the real tensor sizes, with and without the MTP layers."""
    layer = re.compile(r"^model\.layers\.(\d+)\.")
    total = decode = 0
    elements = 0
    for path in shards.values():
        try:
            with path.open("rb") as fh:
                (length,) = struct.unpack("<Q", fh.read(8))
                header = json.loads(fh.read(length))
        except (OSError, ValueError, struct.error):
            return {"error": f"unreadable shard header {path.name}"}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            start, end = info["data_offsets"]
            size = end - start
            total += size
            m = layer.match(name)
            if m and int(m.group(1)) >= num_layers:
                continue
            decode += size
            count = 1
            for dim in info["shape"]:
                count *= dim
            elements += count
    out = {"total_bytes_headers": total, "decode_bytes": decode, "decode_elements": elements}
    if facts is None:
        out["index"] = None
    return out
