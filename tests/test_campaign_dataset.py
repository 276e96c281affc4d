"""`[sweep] dataset`: a campaign's cells read fixed prompts from a file, as another client can
(tests/bench/vllm_sweep_compare.py runs one beside `vllm bench sweep serve` on one JSONL)."""
from __future__ import annotations

import pytest

from console.campaign.runner import bench_argv
from console.campaign.spec import CampaignError, from_dict, load

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
