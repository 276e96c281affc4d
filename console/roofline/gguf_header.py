"""Read a GGUF file's header: llama.cpp's metadata and each tensor's type and shape, never its weights.

A GGUF file starts with the magic `GGUF`, a version, the tensor and
key/value counts, then the key/values (architecture, dims, tokenizer) and
one entry per tensor (name, dims, ggml type, offset). Those are all the
roofline needs. Everything read is hostile: the header is read from a
bounded prefix of the file, every count and length is checked against what
is left of it before anything is allocated, and a file that needs more than
MAX_HEADER bytes of header is refused, not followed.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import RooflineError
from .shard_headers import Tensor

MAGIC = b"GGUF"
# A large model's header is mostly its tokenizer (150k tokens and their merges: some 10 MB); no real
# header comes near this.
MAX_HEADER = 64 * 1024 * 1024
FIRST_READ = 4 * 1024 * 1024
MAX_TENSORS = 1 << 20
MAX_DIMS = 8
MAX_STRING = 1 << 20        # one key, one token, one tensor name
DEFAULT_ALIGNMENT = 32

# ggml tensor types: name, elements per block, bytes per block (ggml.h / gguf-py's GGML_QUANT_SIZES).
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
}
# key/value types: struct format of the scalar ones
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class NeedMore(Exception):
    """The prefix read ends inside the header: read a longer one."""


@dataclass
class GGUFHeader:
    source: str
    version: int
    metadata: dict[str, Any]
    tensors: list[Tensor] = field(default_factory=list)
    data_start: int = 0         # where the tensor data begins (the header's end, aligned)

    @property
    def architecture(self) -> str:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else ""

    def arch_value(self, key: str) -> Any:
        """`{architecture}.{key}`, e.g. `block_count`."""
        return self.metadata.get(f"{self.architecture}.{key}")

    @property
    def tensor_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors)


class _Reader:
    def __init__(self, buf: bytes, source: str):
        self.buf, self.pos, self.source = buf, 0, source

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.buf):
            raise NeedMore
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        n = self.scalar("<Q")
        if n > MAX_STRING:
            raise RooflineError(f"GGUF {self.source}: a string of {n} bytes in the header, longer than any real one")
        return self.take(n).decode("utf-8", errors="replace")

    def value(self, kind: int, depth: int = 0) -> Any:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY and depth == 0:
            elem = self.scalar("<I")
            n = self.scalar("<Q")
            if n > MAX_HEADER:   # each element takes at least a byte: more than that cannot fit the header
                raise RooflineError(f"GGUF {self.source}: an array of {n} elements, past any header's size")
            if elem in _SCALARS:   # numbers (token scores, types): skipped, only their count kept
                self.take(n * struct.calcsize(_SCALARS[elem]))
                return _Skipped(n)
            if elem == _STRING:
                for _ in range(n):
                    self.string()
                return _Skipped(n)
            raise RooflineError(f"GGUF {self.source}: an array of value type {elem}, which GGUF does not define")
        raise RooflineError(f"GGUF {self.source}: value type {kind}, which GGUF does not define")


@dataclass(frozen=True)
class _Skipped:
    """An array whose elements the roofline has no use for (the tokenizer's tokens, scores, merges)."""

    count: int


def parse(buf: bytes, source: str) -> GGUFHeader:
    """The header from a prefix of the file; NeedMore when the prefix ends inside it."""
    r = _Reader(buf, source)
    if r.take(4) != MAGIC:
        raise RooflineError(f"{source}: not a GGUF file (no 'GGUF' magic)")
    version = r.scalar("<I")
    if version not in (2, 3):
        raise RooflineError(f"{source}: GGUF version {version} is not read (versions 2 and 3 are)")
    n_tensors, n_kv = r.scalar("<Q"), r.scalar("<Q")
    if n_tensors > MAX_TENSORS or n_kv > MAX_TENSORS:
        raise RooflineError(f"{source}: GGUF header claims {n_tensors} tensors and {n_kv} keys, beyond any model's")
    meta: dict[str, Any] = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.scalar("<I"))
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        n_dims = r.scalar("<I")
        if n_dims > MAX_DIMS:
            raise RooflineError(f"{source}: tensor {name[:80]!r} has {n_dims} dims (no real tensor has more than {MAX_DIMS})")
        dims = tuple(r.scalar("<Q") for _ in range(n_dims))
        kind = r.scalar("<I")
        r.scalar("<Q")   # offset into the data: not needed, sizes come from type and shape
        if kind not in GGML_TYPES:
            raise RooflineError(f"{source}: tensor {name[:80]!r} has ggml type {kind}, which the roofline does not know")
        type_name, block, block_bytes = GGML_TYPES[kind]
        elements = 1
        for d in dims:
            elements *= d
        if elements % block or elements > 2**48:
            raise RooflineError(f"{source}: tensor {name[:80]!r} of shape {dims} does not fill whole {type_name} blocks")
        # GGUF lists dims innermost first; the roofline's shapes are outermost first, as safetensors'
        tensors.append(Tensor(name, type_name, elements // block * block_bytes, tuple(reversed(dims))))
    align = meta.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(align, int) or isinstance(align, bool) or align < 1 or align > 1 << 20:
        align = DEFAULT_ALIGNMENT
    start = -(-r.pos // align) * align
    return GGUFHeader(source, version, {k: v for k, v in meta.items() if not isinstance(v, _Skipped)} |
                      {k: v.count for k, v in meta.items() if isinstance(v, _Skipped) and k.startswith("tokenizer.ggml.tokens")},
                      tensors, start)


def read_prefixes(read_prefix, source: str) -> GGUFHeader:
    """The header, read through `read_prefix(n) -> bytes` with a growing n up to MAX_HEADER."""
    size = FIRST_READ
    while True:
        buf = read_prefix(size)
        try:
            return parse(buf, source)
        except NeedMore:
            if len(buf) < size:
                raise RooflineError(f"{source}: GGUF file ends inside its header") from None
            if size >= MAX_HEADER:
                raise RooflineError(f"{source}: GGUF header longer than {MAX_HEADER // 2**20} MiB, "
                                    "longer than any real model's") from None
            size = min(size * 4, MAX_HEADER)


def read_local(path: str | Path) -> GGUFHeader:
    """The header of a local .gguf file; RooflineError says why it cannot be read."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise RooflineError(f"GGUF file not found: {path}")

    def prefix(n: int) -> bytes:
        with path.open("rb") as fh:
            return fh.read(n)

    try:
        return read_prefixes(prefix, str(path))
    except OSError as exc:
        raise RooflineError(f"{path}: unreadable ({exc})") from None


def is_gguf(path: str | Path) -> bool:
    """A model path that names a GGUF file (by its name: the file may be on another host)."""
    return str(path).lower().endswith(".gguf")
