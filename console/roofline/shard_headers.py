"""Read a safetensors checkpoint's tensor list from its shard headers, here or over SSH, never its weights.

A shard starts with 8 bytes (little-endian header length) and a JSON header
naming every tensor's dtype, shape and byte range. Those few kilobytes per
shard give the exact bytes of every tensor class. Everything read is
hostile: sizes are bounded, names are checked, and a shard list from the
index is resolved inside the model directory before anything is opened.
"""
from __future__ import annotations

import base64
import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import RooflineError

INDEX = "model.safetensors.index.json"
MAX_HEADER = 100 * 1024 * 1024      # a header larger than this is not a real checkpoint's
MAX_INDEX = 64 * 1024 * 1024
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

    @property
    def total_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)


def parse_header(raw: bytes, shard: str) -> list[Tensor]:
    """The tensors of one shard header (the JSON after the 8-byte length)."""
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise RooflineError(f"checkpoint shard {shard}: header is not valid JSON") from None
    if not isinstance(doc, dict):
        raise RooflineError(f"checkpoint shard {shard}: header is not a JSON object")
    out = []
    for name, info in doc.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise RooflineError(f"checkpoint shard {shard}: tensor {name[:80]!r} has no dtype/shape/offsets")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if (not isinstance(dtype, str) or not isinstance(shape, list) or not isinstance(offsets, list)
                or len(offsets) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in offsets + shape)
                or offsets[1] < offsets[0]):
            raise RooflineError(f"checkpoint shard {shard}: tensor {name[:80]!r} has a malformed entry")
        out.append(Tensor(name, dtype, offsets[1] - offsets[0], tuple(shape)))
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
    return names, total if isinstance(total, int) and not isinstance(total, bool) else None


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
        doc = json.loads(index_path.read_bytes())
    except (OSError, ValueError) as exc:
        raise RooflineError(f"{index_path}: unreadable ({exc})") from None
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


# Runs on the host: for the index and each *.safetensors file, its header only (base64, one line each).
_REMOTE = r"""
cd -- "$1" 2>/dev/null || { echo "NODIR"; exit 0; }
if [ -f model.safetensors.index.json ]; then
  printf 'INDEX '; head -c %(max_index)d model.safetensors.index.json | base64 | tr -d '\n'; echo
fi
for f in *.safetensors; do
  [ -f "$f" ] || continue
  set -- $(head -c 8 -- "$f" | od -An -v -tu1)
  [ $# -eq 8 ] || { printf 'SHORT %%s\n' "$(printf %%s "$f" | base64 | tr -d '\n')"; continue; }
  n=$(( $1 + ($2 << 8) + ($3 << 16) + ($4 << 24) + ($5 << 32) + ($6 << 40) + ($7 << 48) + ($8 << 56) ))
  printf 'SHARD %%s ' "$(printf %%s "$f" | base64 | tr -d '\n')"
  if [ "$n" -lt 0 ] || [ "$n" -gt %(max_header)d ]; then echo "BIG"; continue; fi
  head -c $((8 + n)) -- "$f" | tail -c "$n" | base64 | tr -d '\n'; echo
done
""" % {"max_index": MAX_INDEX, "max_header": MAX_HEADER}


def remote_argv(model_dir: str) -> list[str]:
    """The one command that lists a remote checkpoint's headers (sh, head, od, tail, base64)."""
    return ["sh", "-c", _REMOTE, "gpudeck-headers", model_dir]


def parse_remote(output: str, source: str) -> CheckpointHeaders | None:
    """The headers from `remote_argv`'s output; None when the directory holds no safetensors."""
    index_names: set[str] | None = None
    total = None
    shards: dict[str, list[Tensor]] = {}
    for line in output.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "NODIR":
            raise RooflineError(f"checkpoint {source}: no such directory")
        try:
            if kind == "INDEX":
                index_names, total = _index_shards(json.loads(base64.b64decode(rest)), source)
            elif kind in ("SHARD", "SHORT"):
                name_b64, _, body = rest.partition(" ")
                name = base64.b64decode(name_b64).decode("utf-8", errors="replace")
                if kind == "SHORT" or body == "BIG":
                    shards[name] = []
                    if kind == "SHORT":
                        raise RooflineError(f"checkpoint shard {source}/{name[:80]}: shorter than its header length")
                    raise RooflineError(f"checkpoint shard {source}/{name[:80]}: header beyond {MAX_HEADER} bytes")
                shards[name] = parse_header(base64.b64decode(body), name)
        except (ValueError, TypeError) as exc:
            raise RooflineError(f"checkpoint {source}: unreadable header listing ({exc})") from None
    wanted = index_names if index_names is not None else _without_index(set(shards))
    if not wanted:
        return None
    missing = sorted(wanted - set(shards))
    if missing:
        raise RooflineError(f"checkpoint {source}: shard {missing[0][:80]} named by the index is missing")
    out = CheckpointHeaders(source=source, index_total_size=total)
    for name in sorted(wanted):
        out.tensors.extend(shards[name])
        out.shards += 1
    return out


async def read_remote(host, model_dir: str, timeout: float = 60.0) -> CheckpointHeaders | None:
    """The headers of a checkpoint on a host (local or SSH), read with one command."""
    from ..hosts import HostError

    source = f"{getattr(host, 'name', 'host')}:{model_dir}"
    try:
        result = await host.run(remote_argv(model_dir), timeout=timeout)
    except HostError as exc:
        raise RooflineError(f"checkpoint {source}: {exc}") from None
    if not result.ok:
        raise RooflineError(f"checkpoint {source}: header listing failed ({result.stderr.strip()[:200]})")
    return parse_remote(result.stdout, source)


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
        elements = 0
        for t in decode:
            count = 1
            for dim in t.shape:
                count *= dim
            elements += count
        out.update({"total_bytes_headers": headers.total_bytes, "decode_bytes": sum(t.nbytes for t in decode),
                    "decode_elements": elements})
    elif problem:
        out["error"] = problem
    return out
