"""The Roofline tab while the checkpoint beside the profile's config is slow to read.

The headers are read when the tab first works out the roofline; a slow disk,
a huge header or a hostile one must not hold the console's keys meanwhile.
"""
from __future__ import annotations

import json
import struct
import threading

from console.roofline import shard_headers
from console.session import HostSession
from profiles.profile import profile_from_dict
from screens.roofline_pane import RooflinePane
from tests.harness import HostApp, wait_until

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
          "intermediate_size": 128, "torch_dtype": "bfloat16", "tie_word_embeddings": False, "rms_norm_eps": 1e-6}


def _model(folder):
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    header = json.dumps({"model.embed_tokens.weight": {"dtype": "BF16", "shape": [256, 64],
                                                       "data_offsets": [0, 256 * 64 * 2]}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(256 * 64 * 2))
    return folder / "config.json"


async def test_keys_work_while_the_checkpoint_headers_are_being_read(tmp_path, monkeypatch):
    config = _model(tmp_path / "m")
    reading, release = threading.Event(), threading.Event()
    real = shard_headers.read_local

    def slow_read(model_dir):
        reading.set()
        release.wait(20)   # bounded, so the old code fails on the assertion below instead of hanging
        return real(model_dir)
    monkeypatch.setattr(shard_headers, "read_local", slow_read)
    prof = profile_from_dict("slow", {"model": {"config": str(config)}, "gpu": {"name": "H100 SXM", "count": 1}})
    app = HostApp(RooflinePane(), HostSession.open(prof), footer=False)
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            pane = app.query_one(RooflinePane)
            await wait_until(pilot, reading.is_set, what="the header read to start")
            await pilot.press("w")
            await wait_until(pilot, lambda: pane.has_class("whatif"), what="w opening the what-if")
            assert not release.is_set() and pane.roof is None, "the key was handled while the read went on"
            release.set()
            await wait_until(pilot, lambda: pane.roof is not None, what="the roofline once the read ends")
            assert pane.roof.weights_from() == "from the checkpoint"
    finally:
        release.set()


async def test_a_what_if_typed_during_the_read_still_leads_to_the_hosts_checkpoint(tmp_path, monkeypatch):
    """The what-if's roofline takes over from the first one; the launch script's checkpoint is still read after."""
    import screens.roofline_pane as pane_module

    config = _model(tmp_path / "m")
    reading, release, read = threading.Event(), threading.Event(), threading.Event()
    real = shard_headers.read_local
    asked: list[str] = []

    def slow_read(model_dir):
        reading.set()
        release.wait(20)
        read.set()
        return real(model_dir)

    async def launch_checkpoint(session):
        asked.append(session.name)
        return None, "no launch script of the profile names a model directory"
    monkeypatch.setattr(shard_headers, "read_local", slow_read)
    monkeypatch.setattr(pane_module, "checkpoint_for_profile", launch_checkpoint)
    prof = profile_from_dict("slow", {"model": {"config": str(config)}, "gpu": {"name": "H100 SXM", "count": 1}})
    app = HostApp(RooflinePane(), HostSession.open(prof), footer=False)
    try:
        async with app.run_test(size=(160, 45)) as pilot:
            pane = app.query_one(RooflinePane)
            await wait_until(pilot, reading.is_set, what="the header read to start")
            await pilot.press("w")
            await wait_until(pilot, lambda: pane.has_class("whatif"), what="w opening the what-if")
            pane.query_one("#wi-context").value = "8192"
            await wait_until(pilot, lambda: pane.inputs.context == 8192, what="the what-if taken")
            assert not read.is_set(), "the what-if was taken while the read went on"
            release.set()
            await wait_until(pilot, lambda: pane.roof is not None and pane.roof.setup.context == 8192,
                             what="the what-if's roofline")
            await wait_until(pilot, lambda: asked == ["slow"], what="the launch script's checkpoint asked for")
    finally:
        release.set()
