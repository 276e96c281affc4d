"""A safetensors index beside the config gives the checkpoint's real sizes."""
from __future__ import annotations

import json
import struct

from console import roofline

CONFIG = {"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 16,
          "intermediate_size": 16, "num_nextn_predict_layers": 1}


def _shard(path, tensors):
    """Write a real safetensors file: 8-byte header length, JSON header, zeroed data."""
    header, offset = {}, 0
    for name, (dtype, shape, elem) in tensors.items():
        size = elem
        for d in shape:
            size *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"\0" * offset)


def test_index_and_headers(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    _shard(tmp_path / "a.safetensors", {"model.embed_tokens.weight": ("BF16", [16, 8], 2),
                                        "model.layers.0.mlp.down_proj.weight": ("BF16", [8, 16], 2)})
    _shard(tmp_path / "b.safetensors", {"model.layers.1.eh_proj.weight": ("BF16", [8, 16], 2)})  # the MTP layer
    index = {"metadata": {"total_size": 3 * 256},
             "weight_map": {"model.embed_tokens.weight": "a.safetensors",
                            "model.layers.0.mlp.down_proj.weight": "a.safetensors",
                            "model.layers.1.eh_proj.weight": "b.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    facts = roofline.load_model(tmp_path / "config.json")
    ck = facts.checkpoint
    assert ck["total_bytes"] == 768 and ck["tensors"] == 3 and ck["mtp_tensors"] == 1
    assert ck["total_bytes_headers"] == 768
    assert ck["decode_bytes"] == 512 and ck["decode_elements"] == 256


def test_index_without_shards_still_reports_size(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 1234}, "weight_map": {"lm_head.weight": "x.safetensors"}}))
    ck = roofline.load_model(tmp_path / "config.json").checkpoint
    assert ck["total_bytes"] == 1234 and "decode_bytes" not in ck


def test_no_index_means_no_checkpoint_facts(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    assert roofline.load_model(tmp_path / "config.json").checkpoint is None
