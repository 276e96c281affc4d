"""Checkpoint headers no real checkpoint has: each refused in one line naming the shard, quickly, and
read a bounded batch at a time from a host."""
from __future__ import annotations

import asyncio
import json
import struct
import subprocess
import sys

import pytest

from console.hosts.local import LocalHost
from console.roofline import RooflineError
from console.roofline.remote_headers import read_remote
from console.roofline.shard_headers import MAX_HEADER, parse_header, read_local

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
          "intermediate_size": 128, "torch_dtype": "bfloat16", "tie_word_embeddings": False, "rms_norm_eps": 1e-6}


def _entry(shape: str, offsets: str = "0,8") -> bytes:
    return ('{"model.embed_tokens.weight":{"dtype":"BF16","shape":[%s],"data_offsets":[%s]}}' % (shape, offsets)).encode()


def _shard(path, header: bytes, declared: int | None = None) -> None:
    path.write_bytes(struct.pack("<Q", len(header) if declared is None else declared) + header)


def _model(folder, header: bytes):
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    _shard(folder / "model.safetensors", header)
    return folder


def test_a_long_shape_of_huge_dims_is_refused_before_any_product():
    """1.5M dims of 2^62 (a 30 MB header): its element count was a big-number product that ran for hours."""
    raw = _entry(",".join(["4611686018427387904"] * 1_500_000))
    with pytest.raises(RooflineError, match=r"model\.safetensors: tensor 'model\.embed_tokens\.weight' has 1500000 dims"):
        parse_header(raw, "model.safetensors")


@pytest.mark.parametrize("header, says", [
    (_entry("256,64", "0,1" + "0" * 400), "data offsets past"),
    (_entry(",".join(["1"] * 20_000)), "has 20000 dims"),
    (_entry("4611686018427387904,4611686018427387904,4,4"), "shape past"),
    (b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
], ids=["offsets-10^400", "20000-dims", "elements", "100k-deep"])
def test_each_hostile_header_is_one_clear_line(tmp_path, header, says):
    folder = _model(tmp_path / "m", header)
    out = subprocess.run([sys.executable, "-m", "console", "roofline", "--checkpoint", str(folder),
                          "--model-config", str(folder / "config.json"), "--gpu", "H100 SXM", "--count", "1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "internal error" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "checkpoint shard model.safetensors" in lines[0] and says in lines[0], out.stderr


class Recording(LocalHost):
    """This machine, keeping the length of every command's output."""

    def __init__(self):
        super().__init__()
        self.outputs: list[int] = []

    async def run(self, argv, *, timeout=None, input=None):
        result = await super().run(argv, timeout=timeout, input=input)
        self.outputs.append(len(result.stdout))
        return result


def _padded(folder, name: str, size: int) -> None:
    """A real shard whose header is padded with spaces (as safetensors pads) to `size` bytes."""
    header = _entry("2,2", "0,8")
    _shard(folder / name, header + b" " * (size - len(header)))


def test_headers_come_a_bounded_batch_at_a_time(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    for i in range(3):   # 36 MiB of headers in all, more than one batch holds
        _padded(folder, f"model-0000{i + 1}-of-00003.safetensors", 12 * 2**20)
    host = Recording()
    headers = asyncio.run(read_remote(host, str(folder)))
    assert headers.shards == 3 and len(headers.tensors) == 3
    assert len(host.outputs) == 3, "one listing, then two batches"
    assert max(host.outputs) <= MAX_HEADER * 4 // 3 + 4096, "no command's output holds more than one batch"


def test_a_header_length_past_the_cap_is_refused_unread(tmp_path):
    """A sparse shard declaring 100 MiB of header costs nothing on disk; it is judged by its length."""
    folder = tmp_path / "m"
    folder.mkdir()
    with open(folder / "model.safetensors", "wb") as fh:
        fh.write(struct.pack("<Q", 100 * 2**20))
        fh.truncate(8 + 100 * 2**20)
    host = Recording()
    with pytest.raises(RooflineError, match=r"model\.safetensors: header length 104857600 is beyond"):
        asyncio.run(read_remote(host, str(folder)))
    assert max(host.outputs) < 4096, "the header was not read"
    with pytest.raises(RooflineError, match="header length 104857600 is beyond"):
        read_local(folder)


def test_a_checkpoint_whose_tensors_hold_no_bytes_is_one_line(tmp_path):
    """Every comparison with the config model is relative to the checkpoint's bytes: none was a division by zero."""
    folder = _model(tmp_path / "m", _entry("0,64", "0,0"))
    out = subprocess.run([sys.executable, "-m", "console", "roofline", "--checkpoint", str(folder),
                          "--model-config", str(folder / "config.json"), "--gpu", "H100 SXM", "--count", "1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "internal error" not in out.stderr
    assert out.stderr.strip().splitlines() == [f"gpudeck: checkpoint {folder}: the tensors decode reads hold no bytes"]


def test_a_sparse_index_is_read_no_further_than_the_cap(tmp_path):
    """64 MiB of index cost nothing on disk; a host's listing carries at most 32 MiB of it (as base64)."""
    folder = tmp_path / "m"
    folder.mkdir()
    with open(folder / "model.safetensors.index.json", "wb") as fh:
        fh.truncate(64 << 20)
    host = Recording()
    with pytest.raises(RooflineError, match=r"model\.safetensors\.index\.json: not valid JSON"):
        asyncio.run(read_remote(host, str(folder)))
    assert max(host.outputs) <= (32 << 20) * 4 // 3 + 4096
