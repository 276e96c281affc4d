"""`[sweep] dataset`: a campaign's cells read fixed prompts from a file, as another client can
(tests/bench/vllm_sweep_compare.py runs one beside `vllm bench sweep serve` on one JSONL)."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from console.campaign.runner import bench_argv
from console.campaign.spec import CampaignError, from_dict, load
from tests.cli import gpudeck

ROOT = Path(__file__).resolve().parent.parent
BODY = ('[sweep]\nlevels = [4]\noutput_len = 16\nnum_prompts = 8\ndataset = "{dataset}"\n\n'
        '[[grid]]\nbase = "smol-vllm"\nflags = {{ "--max-num-seqs" = [1, 4] }}\n')


def test_a_dataset_beside_the_campaign_file_reaches_every_cells_bench(tmp_path):
    (tmp_path / "prompts.jsonl").write_text('{"prompt": "hello", "output_len": 16}\n')
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(BODY.format(dataset="prompts.jsonl"))
    spec = load(campaign)
    assert spec.sweep.dataset == str((tmp_path / "prompts.jsonl").resolve())
    argv = bench_argv(spec, "http://127.0.0.1:8000", "local", tunnelled=False, server_port=None)
    assert argv[argv.index("--dataset") + 1] == spec.sweep.dataset
    assert argv[argv.index("--num-prompts") + 1] == "8" and argv[argv.index("--output-len") + 1] == "16"
    again = from_dict(spec.to_json())          # as the driver reads it back from the campaign's state
    assert again.sweep.dataset == spec.sweep.dataset


def test_without_a_dataset_the_bench_makes_its_prompts(tmp_path):
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(BODY.format(dataset="x").replace('dataset = "x"\n', ""))
    assert "--dataset" not in bench_argv(load(campaign), "http://x", "local", tunnelled=False, server_port=None)


@pytest.mark.parametrize("value, why", [("missing.jsonl", "a prompts file that exists"),
                                        ("a\\nb", "a one-line string")])
def test_a_dataset_that_is_not_a_file_is_one_line_naming_the_key(tmp_path, value, why):
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(BODY.format(dataset=value))
    with pytest.raises(CampaignError, match=rf"campaign.toml: key 'sweep.dataset': expected {why}"):
        load(campaign)


@pytest.mark.parametrize("lines, why", [
    ('{"prompt": "hello"}\n{"prompt": "cut off\n', "line 2: not JSON"),
    ('{"prompt": "hello"}\n{"text": "no prompt"}\n', 'line 2: needs "prompt" (text) or "messages" (a chat)'),
    ('{"prompt": "hello", "output_len": 0}\n', "line 1: output_len must be an integer > 0"),
    ("\n\n", "has no usable prompts"),
])
def test_a_bad_dataset_is_one_line_when_the_campaign_is_made(tmp_path, lines, why):
    """The file is read whole as the cells' bench reads it: before, only its existence was checked,
    so every cell launched its server and then failed on the format."""
    (tmp_path / "prompts.jsonl").write_text(lines)
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(BODY.format(dataset="prompts.jsonl"))
    with pytest.raises(CampaignError) as info:
        load(campaign)
    message = str(info.value)
    assert message.startswith(f"{campaign}: key 'sweep.dataset': dataset ") and message.endswith(why), message
    assert "\n" not in message


def test_chat_messages_for_the_completions_api_are_refused_when_the_campaign_is_made(tmp_path):
    (tmp_path / "chats.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(BODY.format(dataset="chats.jsonl"))
    with pytest.raises(CampaignError, match=r"holds chat messages: set api = \"chat\" in \[sweep\]$"):
        load(campaign)
    campaign.write_text(BODY.format(dataset="chats.jsonl").replace("[sweep]\n", '[sweep]\napi = "chat"\n'))
    assert load(campaign).sweep.api == "chat"


@pytest.fixture
def box(tmp_path):
    """A local profile whose one config would start a 'server' (a sleep): nothing may launch it here."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "smol-vllm.sh").write_text("#!/bin/sh\nexec sleep 30 --max-num-seqs 1\n")
    (scripts / "smol-vllm.sh").chmod(0o755)
    out = gpudeck("profiles", "add", "box", "--local", "--scripts-dir", str(scripts), "--log-dir", str(tmp_path / "logs"))
    assert out.returncode == 0, out.stderr
    return tmp_path


@pytest.mark.parametrize("policy", ["", 'hosts = ["box"]\n'], ids=["one-at-a-time", "lanes"])
def test_a_dataset_spoilt_after_the_campaign_was_made_stops_it_before_any_launch(box, policy):
    """Resume refuses it, and a driver that starts anyway fails with the line, launching nothing."""
    from profiles import store

    from console.campaign import control
    from console.campaign.parallel import runner_for
    from console.store import launches

    prompts = box / "prompts.jsonl"
    prompts.write_text('{"prompt": "hello"}\n')
    campaign = box / "campaign.toml"
    campaign.write_text(BODY.format(dataset="prompts.jsonl") + f"\n[policy]\nready_timeout_s = 5\n{policy}")
    state = control.create("box", campaign)
    prompts.write_text('{"prompt": "hello"}\nnot json\n')
    with pytest.raises(control.ControlError, match=r"key 'sweep.dataset': dataset .* line 2: not JSON$"):
        control.prepare_resume("box", state.id)
    ended = asyncio.run(runner_for(state, store.load("box")).run())
    assert ended.status == "failed" and ended.note.endswith("line 2: not JSON"), ended.note
    assert launches.load_all("box") == []
    assert all(cell.status == "queued" for cell in ended.cells)
