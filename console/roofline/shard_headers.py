"""Read a safetensors checkpoint's tensor list from its shard headers, never its weights (over SSH: remote_headers).

A shard starts with 8 bytes (little-endian header length) and a JSON header
naming every tensor's dtype, shape and byte range. Those few kilobytes per
shard give the exact bytes of every tensor class. Everything read is
hostile: sizes are bounded, names are checked, and a shard list from the
index is resolved inside the model directory before anything is opened.
"""
from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import RooflineError

INDEX = "model.safetensors.index.json"
# A real shard's header is a few hundred KB; Kimi K2's 140k tensors in one unsharded file would make
# about 17 MB (some 120 bytes a tensor). Twice that is room enough, and bounds what one read holds.
MAX_HEADER = 32 * 1024 * 1024
MAX_INDEX = 32 * 1024 * 1024         # the largest real index (Kimi K2: 140k names, some 95 bytes each) is about 13 MB
# No real tensor has more than 5 dims (a video model's 3-D convolution) nor more than some 10^10
# elements (a fused expert bank); past these a header describes no tensor that exists.
MAX_DIMS = 8
MAX_ELEMENTS = 2**48
MAX_BYTES = 2**50                    # a byte offset or size past a petabyte is no checkpoint's
_SHARD_NAME = re.compile(r"^[A-Za-z0-9._+-]+\.safetensors$")


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    nbytes: int
    shape: tuple[int, ...]


@dataclass
class CheckpointHeaders:
    """Every tensor of a checkpoint as its shard headers list it."""

    source: str                       # the directory, or host:directory
    tensors: list[Tensor] = field(default_factory=list)
    shards: int = 0
    index_total_size: int | None = None   # metadata.total_size of the index, when there is one
    gguf: Any = None                      # gguf_header.GGUFHeader when the checkpoint is one GGUF file

    @property
    def total_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)


def load_json(raw: bytes, where: str) -> Any:
    """A header or index as JSON; RooflineError when it is not JSON or nests past the parser's depth."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise RooflineError(f"{where}: nested too deeply to be a safetensors header or index") from None
    except (ValueError, UnicodeDecodeError):
        raise RooflineError(f"{where}: not valid JSON") from None


def _count(value: Any, limit: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit


def elements(shape: list[Any] | tuple[int, ...]) -> int | None:
    """The element count of a shape, or None when a dim is not a count or the product passes
    MAX_ELEMENTS; stops as soon as it does, so a long shape of huge dims costs no big-number product."""
    if not all(_count(dim, MAX_ELEMENTS) for dim in shape):
        return None
    if 0 in shape:
        return 0
    count = 1
    for dim in shape:
        count *= dim
        if count > MAX_ELEMENTS:
            return None
    return count


def _entry_problem(info: Any) -> str | None:
    """Why a tensor entry describes no real tensor, or None when it is well formed and in bounds."""
    if not isinstance(info, dict):
        return "has no dtype/shape/offsets"
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str) or not isinstance(shape, list) or not isinstance(offsets, list) or len(offsets) != 2:
        return "has a malformed entry"
    if len(shape) > MAX_DIMS:
        return f"has {len(shape)} dims (no real tensor has more than {MAX_DIMS})"
    if elements(shape) is None:
        if all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            return f"has a shape past {MAX_ELEMENTS} elements, larger than any tensor's"
        return "has a malformed entry"
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in offsets) or offsets[1] < offsets[0]:
        return "has a malformed entry"
    if offsets[1] > MAX_BYTES:
        return f"has data offsets past {MAX_BYTES} bytes, beyond any checkpoint's"
    return None


def parse_header(raw: bytes, shard: str) -> list[Tensor]:
    """The tensors of one shard header (the JSON after the 8-byte length); RooflineError, one line
    naming the shard, for anything no real checkpoint holds."""
    doc = load_json(raw, f"checkpoint shard {shard}: header")
    if not isinstance(doc, dict):
        raise RooflineError(f"checkpoint shard {shard}: header is not a JSON object")
    out = []
    for name, info in doc.items():
        if name == "__metadata__":
            continue
        problem = _entry_problem(info)
        if problem:
            raise RooflineError(f"checkpoint shard {shard}: tensor {name[:80]!r} {problem}")
        offsets = info["data_offsets"]
        out.append(Tensor(name, info["dtype"], offsets[1] - offsets[0], tuple(info["shape"])))
    return out


def _index_shards(index_doc: Any, source: str) -> tuple[set[str], int | None]:
    if not isinstance(index_doc, dict) or not isinstance(index_doc.get("weight_map"), dict):
        raise RooflineError(f"{source}/{INDEX}: no 'weight_map' object")
    names = set()
    for shard in index_doc["weight_map"].values():
        if not isinstance(shard, str) or not _SHARD_NAME.match(shard):
            raise RooflineError(f"{source}/{INDEX}: shard name {str(shard)[:80]!r} is not a plain file name")
        names.add(shard)
    total = (index_doc.get("metadata") or {}).get("total_size") if isinstance(index_doc.get("metadata"), dict) else None
    return names, total if _count(total, MAX_BYTES) else None


def _without_index(names: set[str]) -> set[str]:
    """The shards that make the checkpoint when there is no index: model.safetensors alone when present,
    and never a second copy in another layout (Mistral's consolidated.safetensors beside the HF shards)."""
    if "model.safetensors" in names:
        return {"model.safetensors"}
    hf = {n for n in names if not n.startswith("consolidated")}
    return hf or names


def read_index(base: Path) -> dict[str, Any] | None:
    """The checkpoint's `model.safetensors.index.json`, bounded; None when there is none."""
    index_path = base / INDEX
    if not index_path.is_file():
        return None
    if index_path.stat().st_size > MAX_INDEX:
        raise RooflineError(f"{index_path}: larger than {MAX_INDEX // 2**20} MiB, not a safetensors index")
    try:
        raw = index_path.read_bytes()
    except OSError as exc:
        raise RooflineError(f"{index_path}: unreadable ({exc})") from None
    doc = load_json(raw, str(index_path))
    _index_shards(doc, str(base))   # its shard names are plain file names, or it is refused here
    return doc


def read_local(model_dir: str | Path) -> CheckpointHeaders | None:
    """The headers of a checkpoint in a local directory; None when it has no safetensors files."""
    base = Path(model_dir).expanduser()
    if not base.is_dir():
        return None
    base = base.resolve()
    index = read_index(base)
    total = None
    if index is not None:
        names, total = _index_shards(index, str(base))
    else:
        names = _without_index({p.name for p in base.glob("*.safetensors") if _SHARD_NAME.match(p.name)})
    if not names:
        return None
    out = CheckpointHeaders(source=str(base), index_total_size=total)
    for name in sorted(names):
        path = (base / name).resolve()
        if path.parent != base or not path.is_file():
            raise RooflineError(f"checkpoint {base}: shard {name} named by the index is missing")
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise RooflineError(f"checkpoint shard {path}: shorter than its 8-byte header length")
            (length,) = struct.unpack("<Q", head)
            if length > MAX_HEADER:
                raise RooflineError(f"checkpoint shard {path}: header length {length} is beyond {MAX_HEADER} bytes")
            raw = fh.read(length)
        if len(raw) != length:
            raise RooflineError(f"checkpoint shard {path}: header cut short")
        out.tensors.extend(parse_header(raw, name))
        out.shards += 1
    return out


_LAYER = re.compile(r"^model\.layers\.(\d+)\.")


def _beyond(name: str, num_layers: int) -> bool:
    """A tensor of a layer past the model's last (an MTP draft layer), which decoding does not read."""
    m = _LAYER.match(name)
    return bool(m) and int(m.group(1)) >= num_layers


def checkpoint_summary(model_dir: Path, num_layers: int, headers: CheckpointHeaders | None,
                       problem: str | None = None) -> dict[str, Any] | None:
    """Size and tensor count of the checkpoint beside a config, from its index and (when `read_local`
    read them) its shard headers, with and without the MTP layers; None when there is no checkpoint.

    `problem` is why the headers could not be read; the index's numbers are kept all the same."""
    base = Path(model_dir)
    try:
        index = read_index(base)
    except RooflineError:
        return {"index": str(base / INDEX), "error": "unreadable safetensors index"}
    if index is None and not (base / "model.safetensors").is_file():
        return None
    out: dict[str, Any] = {"index": None}
    if index is not None:
        weight_map = index["weight_map"]
        total = (index.get("metadata") or {}).get("total_size") if isinstance(index.get("metadata"), dict) else None
        out = {"index": str(base / INDEX), "total_bytes": total, "tensors": len(weight_map),
               "mtp_tensors": sum(1 for n in weight_map if _beyond(n, num_layers))}
    if headers is not None:
        decode = [t for t in headers.tensors if not _beyond(t.name, num_layers)]
        out.update({"total_bytes_headers": headers.total_bytes, "decode_bytes": sum(t.nbytes for t in decode),
                    "decode_elements": sum(elements(t.shape) or 0 for t in decode)})
    elif problem:
        out["error"] = problem
    return out
