"""The checkpoint as the witness: real safetensors shards written with the `safetensors` package.

A tiny Qwen3-MoE-shaped model (real tensor names, one dense layer, two MoE
layers, one MTP layer) is written sharded with an index, in BF16 and with
FP8 experts plus their scales. The headers are read here and over the test
sshd; their bytes by class must match the config model where the two agree,
win where they do not, and say so.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors import TensorSpec, serialize_file

from console import roofline
from console.roofline.checkpoint import place, witness_from_headers
from console.roofline.remote_headers import read_remote
from console.roofline.shard_headers import read_local
from console.roofline.step import experts_touched
from tests.cli import gpudeck

H, LAYERS, HEADS, KV, HD, VOCAB, E, K, MOE_I, DENSE_I = 64, 3, 4, 2, 16, 256, 8, 2, 32, 128
CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": H,
    "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": KV, "head_dim": HD,
    "vocab_size": VOCAB, "num_experts": E, "num_experts_per_tok": K, "moe_intermediate_size": MOE_I,
    "intermediate_size": DENSE_I, "mlp_only_layers": [0], "decoder_sparse_step": 1, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "rms_norm_eps": 1e-6, "num_nextn_predict_layers": 1,
}
_NP = {"bfloat16": 2, "float8_e4m3fn": 1, "float32": 4}


def _tensors(fp8_experts: bool) -> dict[str, tuple[str, list[int]]]:
    """name -> (dtype, shape) of the tiny model, laid out as Hugging Face writes Qwen3-MoE."""
    t: dict[str, tuple[str, list[int]]] = {"model.embed_tokens.weight": ("bfloat16", [VOCAB, H])}
    for i in range(LAYERS + 1):            # layer 3 is the MTP layer decode never runs
        p = f"model.layers.{i}"
        t[f"{p}.input_layernorm.weight"] = ("bfloat16", [H])
        t[f"{p}.post_attention_layernorm.weight"] = ("bfloat16", [H])
        t[f"{p}.self_attn.q_proj.weight"] = ("bfloat16", [HEADS * HD, H])
        t[f"{p}.self_attn.k_proj.weight"] = ("bfloat16", [KV * HD, H])
        t[f"{p}.self_attn.v_proj.weight"] = ("bfloat16", [KV * HD, H])
        t[f"{p}.self_attn.o_proj.weight"] = ("bfloat16", [H, HEADS * HD])
        t[f"{p}.self_attn.q_norm.weight"] = ("bfloat16", [HD])
        t[f"{p}.self_attn.k_norm.weight"] = ("bfloat16", [HD])
        if i == 0:
            for name, shape in (("gate_proj", [DENSE_I, H]), ("up_proj", [DENSE_I, H]), ("down_proj", [H, DENSE_I])):
                t[f"{p}.mlp.{name}.weight"] = ("bfloat16", shape)
            continue
        t[f"{p}.mlp.gate.weight"] = ("bfloat16", [E, H])
        for e in range(E):
            for name, shape in (("gate_proj", [MOE_I, H]), ("up_proj", [MOE_I, H]), ("down_proj", [H, MOE_I])):
                key = f"{p}.mlp.experts.{e}.{name}"
                if fp8_experts:
                    t[f"{key}.weight"] = ("float8_e4m3fn", shape)
                    t[f"{key}.weight_scale_inv"] = ("float32", [1, 1])
                else:
                    t[f"{key}.weight"] = ("bfloat16", shape)
    t["model.norm.weight"] = ("bfloat16", [H])
    t["lm_head.weight"] = ("bfloat16", [VOCAB, H])
    return t


def _nbytes(dtype: str, shape: list[int]) -> int:
    return _NP[dtype] * int(np.prod(shape))


def write_checkpoint(folder: Path, fp8_experts: bool = False, extra: dict | None = None, shards: int = 3) -> dict:
    """Real safetensors shards and their index; returns name -> bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(CONFIG))
    tensors = {**_tensors(fp8_experts), **(extra or {})}
    names = sorted(tensors)
    weight_map, sizes = {}, {}
    for s in range(shards):
        part = names[s::shards]
        shard = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        keep = []
        specs = {}
        for name in part:
            dtype, shape = tensors[name]
            n = _nbytes(dtype, shape)
            buf = np.zeros(n, dtype=np.uint8)
            keep.append(buf)
            specs[name] = TensorSpec(dtype=dtype, shape=shape, data_ptr=buf.ctypes.data, data_len=n)
            weight_map[name] = shard
            sizes[name] = n
        serialize_file(specs, str(folder / shard), None)
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": sum(sizes.values())}, "weight_map": weight_map}))
    return sizes


def _step_weight_bytes(r) -> float:
    return r.at(1).ideal_weight_bytes


def test_bf16_checkpoint_agrees_with_the_config_model(tmp_path):
    sizes = write_checkpoint(tmp_path / "m")
    facts = roofline.load_model(tmp_path / "m" / "config.json")
    assert facts.headers is not None and facts.headers.shards == 3
    with_ck = roofline.compute(facts, "H100 SXM", 1, context=0)
    facts.headers = None
    config_only = roofline.compute(facts, "H100 SXM", 1, context=0)
    assert with_ck.weights_from() == "from the checkpoint" and config_only.weights_from() == "from config.json only"
    assert with_ck.setup.witness.disagreements == []
    assert _step_weight_bytes(with_ck) == pytest.approx(_step_weight_bytes(config_only), rel=1e-12)
    mtp = sum(n for name, n in sizes.items() if name.startswith("model.layers.3."))
    assert with_ck.setup.witness.total_bytes == sum(sizes.values()) - mtp
    assert with_ck.setup.witness.left_out == {"mtp": mtp}


def test_fp8_experts_the_headers_win_and_the_disagreement_is_named(tmp_path):
    sizes = write_checkpoint(tmp_path / "m", fp8_experts=True)
    facts = roofline.load_model(tmp_path / "m" / "config.json")
    r = roofline.compute(facts, "H100 SXM", 1, context=0, batches=(1, 4))
    w = r.setup.witness
    text = " | ".join(w.disagreements)
    assert "config says 16-bit routed experts, checkpoint has F8_E4M3 routed experts" in text
    assert "the checkpoint's bytes are used" in text and any("F8_E4M3" in x for x in r.warnings())
    assert w.dtype_by_class["routed_experts"] == "F8_E4M3" and w.dtype_by_class["attention"] == "BF16"
    # the step: everything but the input table and the routed experts, one table row,
    # and per MoE layer the routed tensors (scales included) x experts touched / E
    routed = {i: sum(n for name, n in sizes.items() if name.startswith(f"model.layers.{i}.mlp.experts.")) for i in (1, 2)}
    kept = sum(sizes.values()) - sum(n for name, n in sizes.items() if name.startswith("model.layers.3."))
    fixed = kept - sizes["model.embed_tokens.weight"] - sum(routed.values())
    row = sizes["model.embed_tokens.weight"] / VOCAB
    for batch in (1, 4):
        touched = experts_touched(E, K, batch)
        expected = fixed + sum(b / E * touched for b in routed.values()) + batch * row
        assert r.at(batch).ideal_weight_bytes == pytest.approx(expected, rel=1e-12)
    assert w.bytes_by_class["routed_experts"] == sum(routed.values())
    assert w.scale_bytes == 2 * E * 3 * 4


def test_a_large_unplaceable_tensor_refuses_naming_its_prefix(tmp_path):
    big = {f"model.layers.{i}.frobnicator.weight": ("bfloat16", [256, 64]) for i in range(LAYERS)}
    write_checkpoint(tmp_path / "m", extra=big)
    facts = roofline.load_model(tmp_path / "m" / "config.json")
    with pytest.raises(roofline.RooflineError, match=r"'model\.layers\.\*\.frobnicator\.weight'"):
        roofline.compute(facts, "H100 SXM", 1)
    small = {"model.layers.0.frobnicator.weight": ("bfloat16", [4])}
    write_checkpoint(tmp_path / "n", extra=small)
    r = roofline.compute(roofline.load_model(tmp_path / "n" / "config.json"), "H100 SXM", 1)
    assert r.setup.witness.unplaced_bytes == 8


def _read_over_ssh(profile, folder: Path):
    """`read_remote` of `folder` through a fresh connection to the test sshd, closed after."""
    from console.hosts import host_for

    async def remote():
        host = host_for(profile)
        try:
            return await read_remote(host, str(folder))
        finally:
            await host.close()
    return asyncio.run(remote())


def test_the_same_headers_over_the_test_sshd(tmp_path, ssh_profile):
    write_checkpoint(tmp_path / "m", fp8_experts=True)
    local = read_local(tmp_path / "m")
    over_ssh = _read_over_ssh(ssh_profile, tmp_path / "m")
    assert over_ssh.source.endswith(str(tmp_path / "m")) and over_ssh.shards == local.shards == 3
    assert sorted(over_ssh.tensors, key=lambda t: t.name) == sorted(local.tensors, key=lambda t: t.name)
    facts = roofline.load_model(tmp_path / "m" / "config.json")
    facts.headers = None
    r = roofline.compute(facts, "H100 SXM", 1, checkpoint=over_ssh)
    assert r.weights_from() == "from the checkpoint"
    there, here = witness_from_headers(over_ssh, LAYERS).to_json(), witness_from_headers(local, LAYERS).to_json()
    assert there.pop("source") != here.pop("source") and there == here


def test_remote_listing_of_a_missing_directory_is_one_line(tmp_path, ssh_profile):
    with pytest.raises(roofline.RooflineError, match="no such directory"):
        _read_over_ssh(ssh_profile, tmp_path / "nope")


def test_hostile_headers_are_refused_by_name(tmp_path):
    folder = tmp_path / "m"
    write_checkpoint(folder)
    shard = folder / "model-00001-of-00003.safetensors"
    shard.write_bytes((2**40).to_bytes(8, "little") + b"{}")
    with pytest.raises(roofline.RooflineError, match="header length"):
        read_local(folder)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["x"] = "../../etc/passwd.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(roofline.RooflineError, match="not a plain file name"):
        read_local(folder)


# -- real index files from public model repositories (tests/fixtures/safetensors-index, SOURCES.tsv) --

INDEXES = Path(__file__).parent / "fixtures" / "safetensors-index"


@pytest.mark.parametrize("path", sorted(INDEXES.glob("*.names.txt")), ids=lambda p: p.name.split(".names")[0])
def test_every_tensor_of_a_real_checkpoint_has_a_place(path):
    lines = path.read_text().splitlines()
    layers = int(lines[0].split()[2])             # "# layers N ..." from the config beside the index
    unplaced = [n for n in lines[1:] if n and place(n, layers)[0] is None]
    assert unplaced == []
    classes = {place(n, layers)[0] for n in lines[1:] if n}
    assert {"embedding", "attention", "norms"} <= classes


# -- the CLI: --checkpoint, and a profile's launch script over the test sshd ------------------------


def test_cli_checkpoint_dir_makes_the_headers_the_witness(tmp_path):
    write_checkpoint(tmp_path / "m", fp8_experts=True)
    config = tmp_path / "elsewhere.json"
    config.write_text(json.dumps(CONFIG))          # a config away from its checkpoint: config.json only
    base = ["--model-config", str(config), "--gpu", "H100 SXM", "--count", "1", "--json"]
    alone = json.loads(gpudeck("roofline", *base).stdout)
    assert alone["weights_from"] == "from config.json only" and alone["checkpoint_witness"] is None
    out = gpudeck("roofline", *base, "--checkpoint", str(tmp_path / "m"))
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["weights_from"] == "from the checkpoint"
    assert doc["checkpoint_witness"]["dtype_by_class"]["routed_experts"] == "F8_E4M3"
    assert any("F8_E4M3 routed experts" in w for w in doc["warnings"])
    text = gpudeck("roofline", *base[:-1], "--checkpoint", str(tmp_path / "m")).stdout
    assert "weights: from the checkpoint" in text and "warning: config says 16-bit routed experts" in text


def test_cli_profile_reads_the_launch_scripts_model_over_ssh(tmp_path, sshd, gpudeck_home):
    from profiles import store
    from profiles.atomic import write_atomic
    from profiles.paths import known_hosts_file
    from profiles.profile import profile_from_dict

    write_checkpoint(tmp_path / "model", fp8_experts=True)
    config = tmp_path / "config-copy.json"
    config.write_text(json.dumps(CONFIG))
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "serve.sh").write_text(f"#!/bin/sh\nvllm serve {tmp_path / 'model'} --tensor-parallel-size 1\n")
    write_atomic(known_hosts_file(), sshd.known_hosts.read_text())
    store.save(profile_from_dict("box", {
        "transport": "ssh",
        "ssh": {"host": "gpudeck-test", "config_file": str(sshd.ssh_config), "connect_timeout_s": 5},
        "server": {"scripts_dir": str(scripts)},
        "model": {"config": str(config)}, "gpu": {"name": "H100 SXM", "count": 1}}))
    out = gpudeck("roofline", "--profile", "box", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["weights_from"] == "from the checkpoint"
    assert doc["checkpoint_witness"]["source"].endswith(str(tmp_path / "model"))
    (scripts / "serve.sh").write_text("#!/bin/sh\nvllm serve some-org/some-model\n")   # a hub id, no path
    doc = json.loads(gpudeck("roofline", "--profile", "box", "--json").stdout)
    assert doc["weights_from"] == "from config.json only"
    assert any("no launch script of the profile names a model directory" in w for w in doc["warnings"])


@pytest.mark.parametrize("name,expected", [
    # Nemotron-H: every block is a "mixer"; the leaf says what it is
    ("backbone.embeddings.weight", "embedding"),
    ("backbone.layers.3.mixer.in_proj.weight", "attention"),
    ("backbone.layers.4.mixer.up_proj.weight", "dense_mlp"),
    ("backbone.layers.5.mixer.experts.17.down_proj.weight", "routed_experts"),
    ("backbone.layers.5.mixer.shared_experts.up_proj.weight", "shared_experts"),
    ("backbone.layers.5.mixer.gate.e_score_correction_bias", "router"),
    ("backbone.norm_f.weight", "norms"),
    # gpt-oss: fused expert blocks and their MXFP4 scales
    ("model.layers.0.mlp.experts.gate_up_proj_blocks", "routed_experts"),
    ("model.layers.0.mlp.router.weight", "router"),
    ("model.layers.0.self_attn.sinks", "attention"),
    # MTP modules however they are spelled
    ("mtp.layers.0.mlp.experts.3.up_proj.weight", "mtp"),
    ("mtp.fc.weight", "mtp"),
    ("model.layers.61.eh_proj.weight", "mtp"),
])
def test_real_layouts_are_placed(name, expected):
    assert place(name, 61)[0] == expected
    assert place("model.layers.0.mlp.experts.gate_up_proj_scales", 61)[1]          # a scale


async def test_the_roofline_tab_reads_the_launch_scripts_checkpoint(tmp_path, gpudeck_home):
    """The tab's assumptions end with where the weight bytes come from, once the host was read."""
    from console.session import HostSession
    from profiles.profile import profile_from_dict
    from screens.roofline_pane import RooflinePane
    from tests.harness import HostApp, wait_until

    write_checkpoint(tmp_path / "model", fp8_experts=True)
    config = tmp_path / "config-copy.json"
    config.write_text(json.dumps(CONFIG))
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "serve.sh").write_text(f"#!/bin/sh\nvllm serve {tmp_path / 'model'}\n")
    profile = profile_from_dict("box", {"transport": "local", "server": {"scripts_dir": str(scripts)},
                                        "model": {"config": str(config)}, "gpu": {"name": "H100 SXM", "count": 1}})
    app = HostApp(RooflinePane(), HostSession.open(profile), footer=False, title="PaneApp")
    async with app.run_test(size=(200, 45)) as pilot:
        pane = app.query_one(RooflinePane)
        # the checkpoint is read in a worker started once the first roofline is drawn; it draws again after
        await wait_until(pilot, lambda: pane.checkpoint is not None and pane.roof is not None
                         and "weights from the checkpoint" in str(pane.query_one("#rl-assumptions").render()),
                         what="the roofline redrawn from the checkpoint")
        assert pane.roof.weights_from() == "from the checkpoint"
        assert "weights from the checkpoint" in str(pane.query_one("#rl-assumptions").render())


def test_without_an_index_a_second_layout_is_not_counted_twice(tmp_path):
    folder = tmp_path / "m"
    sizes = write_checkpoint(folder, shards=1)
    (folder / "model.safetensors.index.json").unlink()
    only = next(folder.glob("model-*.safetensors"))
    (folder / "consolidated.safetensors").write_bytes(only.read_bytes())   # Mistral's own copy of the weights
    headers = read_local(folder)
    assert headers.shards == 1 and headers.total_bytes == sum(sizes.values())
    only.rename(folder / "model.safetensors")
    headers = read_local(folder)
    assert headers.shards == 1 and headers.total_bytes == sum(sizes.values())
