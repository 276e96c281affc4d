"""A checkpoint's shard headers on a host (local or SSH), read a bounded batch at a time.

One command lists the index and each shard's declared header length; the
lengths are judged here before any header is read, and the headers then come
in batches whose declared lengths add up to at most MAX_HEADER, each batch
parsed (off the event loop) before the next is asked for. A sparse shard can
declare a huge header at no cost on disk; read in one go, eight of them once
held gigabytes.
"""
from __future__ import annotations

import asyncio
import base64

from .errors import RooflineError
from .shard_headers import (_SHARD_NAME, INDEX, MAX_HEADER, MAX_INDEX, CheckpointHeaders, Tensor, _index_shards,
                            _without_index, load_json, parse_header)

# Lists the index (bounded) and every *.safetensors file's declared header length; reads no header.
_LIST = r"""
cd -- "$1" 2>/dev/null || { echo "NODIR"; exit 0; }
if [ -f %(index)s ]; then
  printf 'INDEX '; head -c %(max_index)d %(index)s | base64 | tr -d '\n'; echo
fi
for f in *.safetensors; do
  [ -f "$f" ] || continue
  name=$(printf %%s "$f" | base64 | tr -d '\n')
  set -- $(head -c 8 -- "$f" | od -An -v -tu1)
  [ $# -eq 8 ] || { printf 'SHORT %%s\n' "$name"; continue; }
  printf 'LENGTH %%s %%s\n' "$name" "$(( $1 + ($2 << 8) + ($3 << 16) + ($4 << 24) + ($5 << 32) + ($6 << 40) + ($7 << 48) + ($8 << 56) ))"
done
""" % {"index": INDEX, "max_index": MAX_INDEX}

# Reads the headers of the shards named after the directory, each given with its length: NAME LENGTH ...
_FETCH = r"""
cd -- "$1" 2>/dev/null || { echo "NODIR"; exit 0; }
shift
while [ $# -ge 2 ]; do
  printf 'SHARD %s ' "$1"; head -c $((8 + $2)) -- "$1" | tail -c +9 | base64 | tr -d '\n'; echo
  shift 2
done
"""


def list_argv(model_dir: str) -> list[str]:
    """The command that lists a remote checkpoint's index and header lengths (sh, head, od, base64)."""
    return ["sh", "-c", _LIST, "gpudeck-headers", model_dir]


def fetch_argv(model_dir: str, batch: list[tuple[str, int]]) -> list[str]:
    """The command that reads these shards' headers (plain file names, lengths already judged)."""
    return ["sh", "-c", _FETCH, "gpudeck-headers", model_dir] + [w for name, n in batch for w in (name, str(n))]


def parse_listing(output: str, source: str) -> tuple[set[str] | None, int | None, dict[str, int | None]]:
    """(the index's shard names or None, its total size, declared header length by shard name,
    None for a shard shorter than its 8-byte length)."""
    index_names: set[str] | None = None
    total = None
    lengths: dict[str, int | None] = {}
    for line in output.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "NODIR":
            raise RooflineError(f"checkpoint {source}: no such directory")
        try:
            if kind == "INDEX":
                index_names, total = _index_shards(load_json(base64.b64decode(rest), f"{source}/{INDEX}"), source)
            elif kind in ("LENGTH", "SHORT"):
                name_b64, _, length = rest.partition(" ")
                name = base64.b64decode(name_b64).decode("utf-8", errors="replace")
                if _SHARD_NAME.match(name):
                    lengths[name] = int(length) if kind == "LENGTH" else None
        except (ValueError, TypeError) as exc:
            raise RooflineError(f"checkpoint {source}: unreadable header listing ({exc})") from None
    return index_names, total, lengths


def batches(wanted: list[str], lengths: dict[str, int]) -> list[list[tuple[str, int]]]:
    """The shards in runs whose declared header lengths add up to at most MAX_HEADER."""
    out: list[list[tuple[str, int]]] = []
    room = 0
    for name in wanted:
        n = lengths[name]
        if not out or n > room:
            out.append([])
            room = MAX_HEADER
        out[-1].append((name, n))
        room -= n
    return out


def parse_fetched(output: str, batch: list[tuple[str, int]], source: str) -> dict[str, list[Tensor]]:
    """Each shard's tensors from `fetch_argv`'s output."""
    declared = dict(batch)
    out: dict[str, list[Tensor]] = {}
    for line in output.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "NODIR":
            raise RooflineError(f"checkpoint {source}: no such directory")
        name, _, body = rest.partition(" ")
        if kind != "SHARD" or name not in declared:
            continue
        try:
            raw = base64.b64decode(body)
        except ValueError as exc:
            raise RooflineError(f"checkpoint {source}: unreadable header listing ({exc})") from None
        if len(raw) != declared[name]:
            raise RooflineError(f"checkpoint shard {source}/{name}: header cut short")
        out[name] = parse_header(raw, name)
    missing = sorted(set(declared) - set(out))
    if missing:
        raise RooflineError(f"checkpoint shard {source}/{missing[0]}: header not read")
    return out


async def read_remote(host, model_dir: str, timeout: float = 60.0) -> CheckpointHeaders | None:
    """The headers of a checkpoint on a host; None when the directory holds no safetensors."""
    source = f"{getattr(host, 'name', 'host')}:{model_dir}"
    listing = await _run(host, list_argv(model_dir), source, timeout)
    index_names, total, lengths = await asyncio.to_thread(parse_listing, listing, source)
    wanted = sorted(index_names if index_names is not None else _without_index(set(lengths)))
    if not wanted:
        return None
    for name in wanted:
        if name not in lengths:
            raise RooflineError(f"checkpoint {source}: shard {name[:80]} named by the index is missing")
        n = lengths[name]
        if n is None:
            raise RooflineError(f"checkpoint shard {source}/{name}: shorter than its header length")
        if not 0 <= n <= MAX_HEADER:
            raise RooflineError(f"checkpoint shard {source}/{name}: header length {n} is beyond {MAX_HEADER} bytes")
    out = CheckpointHeaders(source=source, index_total_size=total)
    for batch in batches(wanted, lengths):
        output = await _run(host, fetch_argv(model_dir, batch), source, timeout)
        tensors = await asyncio.to_thread(parse_fetched, output, batch, source)
        del output
        for name, _ in batch:
            out.tensors.extend(tensors[name])
            out.shards += 1
    return out


async def _run(host, argv: list[str], source: str, timeout: float) -> str:
    from ..hosts import HostError

    try:
        result = await host.run(argv, timeout=timeout)
    except HostError as exc:
        raise RooflineError(f"checkpoint {source}: {exc}") from None
    if not result.ok:
        raise RooflineError(f"checkpoint {source}: header listing failed ({result.stderr.strip()[:200]})")
    return result.stdout
