"""Prompts that never repeat, open-loop arrivals as vLLM draws them, and datasets (issue 16)."""
from __future__ import annotations

import json
import random
import statistics

import pytest

from console.bench.client import request_body
from console.bench.drive import arrivals
from console.bench.workload import (Tokenizer, build_workload, dataset_workload, load_dataset,
                                    symbol_prompts)


def longest_shared_prefix(seqs: list) -> int:
    """The longest prefix any two sequences share (adjacent after sorting is enough)."""
    ordered = sorted(seqs)
    best = 0
    for a, b in zip(ordered, ordered[1:]):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        best = max(best, n)
    return best


class ToyTokenizer(Tokenizer):
    """A word-per-token tokenizer in memory, speaking the same methods as the server's."""

    def __init__(self):
        super().__init__(client=None, model=None)
        self.dialect = "llama.cpp"
        self.vocab: dict[str, int] = {}
        self.words: list[str] = []

    async def tokenize(self, text: str) -> list[int]:
        out = []
        for word in text.split():
            if word not in self.vocab:
                self.vocab[word] = len(self.words)
                self.words.append(word)
            out.append(self.vocab[word])
        return out

    async def detokenize(self, tokens: list[int]) -> str:
        return " " + " ".join(self.words[t] for t in tokens)


async def test_ten_thousand_random_prompts_never_repeat_nor_share_a_long_prefix():
    work = await build_workload(None, 10_000, 32, seed=7)
    words = [p.split() for p in work.prompts]
    assert len(set(work.prompts)) == 10_000
    assert all(len(w) == 32 for w in words)
    assert longest_shared_prefix(words) <= 3


async def test_prompts_through_a_tokenizer_are_distinct_from_their_first_tokens():
    tok = ToyTokenizer()
    work = await build_workload(tok, 10_000, 24, seed=3)
    assert work.method == "tokenize" and set(work.lengths) == {24}
    ids = [await tok.tokenize(p) for p in work.prompts]
    assert len({tuple(i) for i in ids}) == 10_000
    assert longest_shared_prefix(ids) <= 3


async def test_levels_of_one_run_never_share_a_unique_prefix():
    a = await build_workload(None, 500, 16, seed=1, first_number=0, total=1000, run_seed=9)
    b = await build_workload(None, 500, 16, seed=2, first_number=500, total=1000, run_seed=9)
    heads = {tuple(p.split()[:2]) for p in a.prompts + b.prompts}
    assert len(heads) == 1000


async def test_shared_prefix_is_exactly_the_asked_length():
    work = await build_workload(None, 2_000, 40, seed=5, shared_prefix_len=10)
    words = [p.split() for p in work.prompts]
    assert len({tuple(w[:10]) for w in words}) == 1
    assert len({tuple(w) for w in words}) == 2_000
    assert longest_shared_prefix([w[10:] for w in words]) <= 3


def test_unique_prefix_grows_when_the_alphabet_is_small():
    prompts = symbol_prompts(10, [5] * 5_000, random.Random(0))
    assert len({tuple(p[:4]) for p in prompts}) == 5_000


async def test_range_ratio_spreads_input_and_output_lengths():
    tok = ToyTokenizer()
    work = await build_workload(tok, 400, 100, seed=2, range_ratio=0.5, output_len=64)
    assert min(work.lengths) >= 50 and max(work.lengths) <= 150 and len(set(work.lengths)) > 20
    assert min(work.output_lens) >= 32 and max(work.output_lens) <= 96


def test_poisson_arrivals_end_at_count_over_rate_with_exponential_gaps():
    times = arrivals(2_000, 4.0, 1.0, seed=1)
    assert times[-1] == pytest.approx(2_000 / 4.0)
    gaps = [b - a for a, b in zip([0.0, *times], times)]
    assert statistics.mean(gaps) == pytest.approx(0.25, rel=0.01)
    # exponential gaps: the standard deviation equals the mean
    assert statistics.pstdev(gaps) / statistics.mean(gaps) == pytest.approx(1.0, abs=0.1)


def test_burstiness_below_one_makes_gaps_more_uneven():
    def cv(b: float) -> float:
        gaps = [y - x for x, y in zip([0.0, *arrivals(3_000, 10.0, b, seed=2)], arrivals(3_000, 10.0, b, seed=2))]
        return statistics.pstdev(gaps) / statistics.mean(gaps)

    assert cv(0.25) > 1.5 > cv(1.0) > 0.7 > cv(4.0)


def test_linear_ramp_sends_faster_at_the_end():
    times = arrivals(1_000, 20.0, 1.0, seed=3, ramp=("linear", 1.0, 20.0))
    first = times[99] - times[0]
    last = times[-1] - times[-100]
    assert first > 3 * last
    assert arrivals(5, float("inf")) == [0.0] * 5
    assert arrivals(4, 2.0, float("inf")) == [0.5, 1.0, 1.5, 2.0]


def test_jsonl_and_sharegpt_datasets(tmp_path):
    jl = tmp_path / "d.jsonl"
    jl.write_text(json.dumps({"prompt": "hello there", "output_len": 7}) + "\n"
                  + json.dumps({"messages": [{"role": "user", "content": "hi"}], "output_len": 3}) + "\n")
    items = load_dataset(jl, "jsonl")
    assert [i.output_len for i in items] == [7, 3] and isinstance(items[1].prompt, list)
    sg = tmp_path / "sg.json"
    sg.write_text(json.dumps([{"conversations": [{"from": "human", "value": "why is the sky blue"},
                                                 {"from": "gpt", "value": "light scatters more at short waves"}]},
                              {"conversations": [{"from": "human", "value": "x"}]}]))
    items = load_dataset(sg, "sharegpt")
    assert len(items) == 1 and items[0].reply.startswith("light")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": 3}\n')
    with pytest.raises(ValueError, match="line 1"):
        load_dataset(bad, "jsonl")


async def test_dataset_workload_takes_lengths_from_the_tokenizer_or_marks_them_approximate(tmp_path):
    sg = tmp_path / "sg.json"
    sg.write_text(json.dumps([{"conversations": [{"from": "human", "value": "one two three"},
                                                 {"from": "gpt", "value": "a b c d e"}]}]))
    items = load_dataset(sg, "sharegpt")
    exact = await dataset_workload(items, ToyTokenizer(), 3, output_len=256)
    assert exact.method == "tokenize" and exact.lengths == [3, 3, 3] and exact.output_lens == [5, 5, 5]
    fixed = await dataset_workload(items, None, 2, output_len=9, fixed_output=True)
    assert fixed.method == "approximate" and fixed.output_lens == [9, 9]


def test_request_options_reach_the_body():
    body = json.loads(request_body("chat", "m", [{"role": "user", "content": "x"}], 8,
                                   {"temperature": 0.7, "top_p": 0.9, "extra_body": {"top_k": 20, "ignore_eos": False}}))
    assert body["messages"] == [{"role": "user", "content": "x"}]
    assert body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["top_k"] == 20
    assert body["ignore_eos"] is False  # extra-body may override any field
