"""A GGUF model priced from its own header: the real SmolLM2-135M Q4_1 GGUF of the test assets.

llama.cpp users have no config.json: the header's metadata (architecture, dims) and each tensor's ggml type and
shape are the config and the witness at once. The reader is checked against the file itself (the tensor data
that follows the header fills the file exactly) and against SmolLM2-135M's published config.
"""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from console import roofline
from console.roofline import gguf_header
from console.roofline.errors import RooflineError
from tests.cli import gpudeck
from tests.realparts import smollm_model

SMOLLM2 = Path(__file__).parent / "fixtures" / "model-configs" / "SmolLM2-135M.json"


@pytest.fixture
def gguf() -> Path:
    """The real SmolLM2 GGUF the llama.cpp tests serve (a fetched asset: the tier marks these tests so)."""
    return smollm_model()


def test_the_header_gives_the_published_dims_and_accounts_for_every_byte(gguf):
    h = gguf_header.read_local(gguf)
    published = json.loads(SMOLLM2.read_text())
    assert h.architecture == "llama" and h.version == 3
    assert h.arch_value("block_count") == published["num_hidden_layers"]
    assert h.arch_value("embedding_length") == published["hidden_size"]
    assert h.arch_value("feed_forward_length") == published["intermediate_size"]
    assert h.arch_value("attention.head_count") == published["num_attention_heads"]
    assert h.arch_value("attention.head_count_kv") == published["num_key_value_heads"]
    assert len(h.tensors) == 2 + 9 * published["num_hidden_layers"]   # tied: no output.weight
    align = h.metadata.get("general.alignment", 32)
    # every tensor's bytes, from its ggml type and shape, fill the file after the header exactly
    assert h.data_start + sum(-(-t.nbytes // align) * align for t in h.tensors) == os.path.getsize(gguf)
    types = {t.dtype for t in h.tensors}
    assert types == {"Q4_1", "Q8_0", "F32"}
    embd = next(t for t in h.tensors if t.name == "token_embd.weight")
    assert embd.shape == (published["vocab_size"], published["hidden_size"]) and embd.dtype == "Q8_0"


def test_the_header_is_read_from_a_bounded_prefix(gguf):
    asked: list[int] = []

    def prefix(n: int) -> bytes:
        asked.append(n)
        with gguf.open("rb") as fh:
            return fh.read(n)

    gguf_header.read_prefixes(prefix, str(gguf))
    assert asked == [gguf_header.FIRST_READ] and asked[0] < os.path.getsize(gguf) / 20


def test_hostile_gguf_files_are_refused_in_one_line(tmp_path, gguf):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(gguf.read_bytes()[:100_000])
    with pytest.raises(RooflineError, match="ends inside its header"):
        gguf_header.read_local(cut)
    other = tmp_path / "model.gguf"
    other.write_bytes(b"\x00\xc3" * 100)
    with pytest.raises(RooflineError, match="not a GGUF file"):
        roofline.load_model(other)
    import struct
    huge = tmp_path / "huge.gguf"   # one key whose length claims 2^40 bytes
    huge.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1 << 40) + b"x" * 64)
    with pytest.raises(RooflineError, match="longer than any real one"):
        gguf_header.read_local(huge)


def test_a_gguf_model_is_priced_from_its_tensors(gguf):
    facts = roofline.load_model(gguf)
    published = json.loads(SMOLLM2.read_text())
    assert facts.num_layers == 30 and facts.tied_embeddings and facts.gguf
    assert facts.total_params == roofline.facts_from_config(published).total_params
    r = roofline.compute(facts, "H200", 1, context=0)
    h = gguf_header.read_local(gguf)
    assert r.weights_from() == "from the checkpoint"
    assert r.setup.witness.total_bytes == h.tensor_bytes
    embd = next(t for t in h.tensors if t.name == "token_embd.weight")
    # batch 1 reads every tensor but the input table, the tied head (the table itself) once, and one row
    assert r.at(1).ideal_weight_bytes == pytest.approx(h.tensor_bytes + embd.nbytes / published["vocab_size"])
    assert r.setup.kv_dtype == "fp16"    # llama.cpp's default cache type


def test_cli_on_a_gguf_path_says_what_it_read(gguf):
    out = gpudeck("roofline", "--model-config", str(gguf), "--gpu", "H200", "--count", "1")
    assert out.returncode == 0, out.stderr
    assert "utf-8" not in out.stdout + out.stderr and "no such directory" not in out.stdout + out.stderr
    assert "weights: from the checkpoint" in out.stdout and "GGUF llama (version 3)" in out.stdout
    assert "quant: the GGUF's own tensor types" in out.stdout


def test_the_header_over_a_host_is_the_same(gguf):
    from console.hosts.local import LocalHost
    from console.roofline.gguf_remote import read_remote_gguf

    async def read():
        host = LocalHost("local")
        try:
            return await read_remote_gguf(host, str(gguf))
        finally:
            await host.close()

    remote = asyncio.run(read())
    local = gguf_header.read_local(gguf)
    assert remote.tensors == local.tensors and remote.metadata == local.metadata

    async def missing():
        host = LocalHost("local")
        try:
            return await read_remote_gguf(host, str(gguf) + ".gone.gguf")
        finally:
            await host.close()

    with pytest.raises(RooflineError, match="no such file"):
        asyncio.run(missing())


def test_a_profile_whose_launch_script_names_a_gguf_gets_a_ceiling_without_a_config(tmp_path, gguf, gpudeck_home):
    from profiles import store
    from profiles.profile import profile_from_dict

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "serve.sh").write_text(f"#!/bin/sh\nllama-server -m {gguf} --port 8080\n")
    store.save(profile_from_dict("box", {"transport": "local", "server": {"scripts_dir": str(scripts)},
                                         "gpu": {"name": "H200", "count": 1}}))
    out = gpudeck("roofline", "--profile", "box", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["weights_from"] == "from the checkpoint"
    assert doc["checkpoint_witness"]["source"] == f"box:{gguf}"
    assert not any("no such directory" in w for w in doc["warnings"])


def test_the_roofline_tab_path_prices_a_gguf_without_a_config(gguf):
    """compute_inputs (the Roofline tab, campaigns, the report) with the launch script's GGUF as its checkpoint."""
    from console.roofline.from_profile import Inputs, compute_inputs
    from console.roofline.gguf_model import headers_from_gguf

    headers = headers_from_gguf(gguf_header.read_local(gguf))
    r = compute_inputs(Inputs(config=None, gpu="H200", count=1), checkpoint=headers)
    assert r.weights_from() == "from the checkpoint" and r.setup.facts.gguf
    assert r.setup.witness.total_bytes == headers.total_bytes


def test_a_config_witnessed_by_a_gguf_checkpoint(gguf):
    """`--checkpoint model.gguf` beside a config.json: llama.cpp's tensor names are placed like the HF ones."""
    out = gpudeck("roofline", "--model-config", str(SMOLLM2), "--checkpoint", str(gguf), "--gpu", "H200", "--count",
                  "1", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    w = doc["checkpoint_witness"]
    assert doc["weights_from"] == "from the checkpoint" and w["unplaced_bytes"] == 0
    assert set(w["bytes_by_class"]) == {"embedding", "attention", "dense_mlp", "norms"}
    assert w["total_bytes"] == gguf_header.read_local(gguf).tensor_bytes
