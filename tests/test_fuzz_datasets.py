"""Fuzzing prompts files, for the bench and for campaigns: one reader, one answer, one line.

A campaign's `sweep.dataset` and the bench's `--dataset` are read by the same
checker (console/bench/dataset.py), before anything is launched or sent. For
generated JSONL files (valid prompt and chat lines, wrong output lengths,
JSON that is not an object, cut lines, odd white space and line ends, byte
order marks, NaN, deep nesting, invalid UTF-8, hostile text, raw bytes) the
checker must agree, line for line, with the format's plain definition (each
line decoded on its own by `json.loads`, `reference_jsonl` below): the same
prompts, or the same refusal naming the same line. A campaign made with such
a file refuses exactly the files the definition refuses, with one line free of
control bytes; ShareGPT files get the same one-line guarantee. A few inputs
also go through `gpudeck bench --dataset` as a subprocess.

Budgets follow tests/test_fuzz_inputs.py (200 inputs a kind, 1,000 with
GPUDECK_FUZZ=nightly).
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.cli import gpudeck
from tests.hostile_text import HOSTILE
from tests.fuzz_budget import fuzz_settings
from tests.test_fuzz_inputs import JSON_VALUE, Tally, fuzz

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGN = ('[sweep]\nlevels = [4]\noutput_len = 16\nnum_prompts = 8\ndataset = "{name}"\napi = "{api}"\n\n'
            '[[grid]]\nbase = "smol-vllm"\nflags = {{ "--max-num-seqs" = [1, 4] }}\n')


# ---- the format's definition ------------------------------------------------------------------

def reference_jsonl(path: Path) -> list[tuple[str | list, int | None]]:
    """The JSONL format as the README states it, read the plain way: every line decoded alone by
    json.loads; blank lines skipped. Returns (prompt, output_len) pairs or raises ValueError."""
    items = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    doc = json.loads(line)
                except (ValueError, RecursionError):
                    raise ValueError(f"dataset {path} line {n}: not JSON") from None
                if not isinstance(doc, dict):
                    raise ValueError(f"dataset {path} line {n}: expected an object with prompt or messages")
                out = doc.get("output_len")
                if out is not None and (not isinstance(out, int) or isinstance(out, bool) or out <= 0):
                    raise ValueError(f"dataset {path} line {n}: output_len must be an integer > 0")
                if isinstance(doc.get("prompt"), str):
                    items.append((doc["prompt"], out))
                elif _chat(doc.get("messages")):
                    items.append((doc["messages"], out))
                else:
                    raise ValueError(f"dataset {path} line {n}: needs \"prompt\" (text) or \"messages\" (a chat)")
    except UnicodeDecodeError as exc:
        raise ValueError(f"cannot read dataset {path}: {exc}") from None
    if not items:
        raise ValueError(f"dataset {path} has no usable prompts")
    return items


def reference_sharegpt(path: Path) -> int:
    """The ShareGPT format, read the plain way: the file is one JSON list (json.loads), and its
    usable conversations have a first and a second turn with non-empty text. Returns how many."""
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, RecursionError):
        raise ValueError("not a JSON list") from None
    if not isinstance(doc, list):
        raise ValueError("not a JSON list")
    usable = 0
    for entry in doc:
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if isinstance(turns, list) and len(turns) >= 2 and all(isinstance(t, dict) for t in turns[:2]) and \
                all(isinstance(t.get("value"), str) and t.get("value") for t in turns[:2]):
            usable += 1
    if not usable:
        raise ValueError("no usable prompts")
    return usable


def _chat(value) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in value)


# ---- generated files --------------------------------------------------------------------------

TEXT = st.one_of(st.text(max_size=30), st.sampled_from(HOSTILE))
MESSAGE = st.fixed_dictionaries({"role": st.sampled_from(["user", "system", 7]), "content": TEXT})
OUTPUT_LEN = st.one_of(st.just(None), st.integers(-3, 1 << 40), st.booleans(), st.floats(allow_nan=True),
                       st.text(max_size=3))


def _line(prompt, output_len, key: str) -> str:
    doc = {key: prompt}
    if output_len is not None:
        doc["output_len"] = output_len
    return json.dumps(doc, ensure_ascii=False)


GOOD_LINE = st.builds(_line, TEXT, st.one_of(st.none(), st.integers(1, 4096)), st.just("prompt"))
CHAT_LINE = st.builds(_line, st.lists(MESSAGE, max_size=3), OUTPUT_LEN, st.just("messages"))
ODD_LINE = st.one_of(
    st.builds(_line, TEXT, OUTPUT_LEN, st.sampled_from(["prompt", "text", "messages"])),
    JSON_VALUE.map(lambda v: json.dumps(v, ensure_ascii=False)),                 # any JSON, objects or not
    GOOD_LINE.map(lambda line: line[: len(line) // 2]),                          # cut mid-line
    st.builds(lambda n: "[" * n + "]" * n, st.integers(900, 3000)),              # nested past the recursion limit
    st.sampled_from(['{"prompt": NaN}', '{"prompt": "a"} {"prompt": "b"}', '{"prompt": "a"},', "\ufeff{\"prompt\": \"a\"}",
                     '{"prompt": "a", "prompt": 3}', '{"prompt": "a"}\x0c', "\x0c", "\u00a0", "  ", "null", "[]"]),
)
SPACE = st.sampled_from(["", "", "", " ", "\t", "\r", "\x0c", "\u00a0", "\ufeff", " \t "])
END = st.sampled_from(["\n", "\n", "\n", "\r\n", "\r", "\n\n", "\u2028"])


def _file(lines: list[tuple[str, str, str, str]]) -> bytes:
    return "".join(before + line + after + end for before, line, after, end in lines).encode("utf-8", "surrogatepass")


JSONL = st.one_of(
    st.lists(st.tuples(SPACE, st.one_of(GOOD_LINE, GOOD_LINE, CHAT_LINE, ODD_LINE), SPACE, END), max_size=12).map(_file),
    st.lists(st.tuples(st.just(""), GOOD_LINE, st.just(""), st.just("\n")), min_size=1, max_size=12).map(_file),
    st.binary(max_size=300),
    st.builds(lambda good, junk, at: good[:at] + junk + good[at:],
              st.lists(GOOD_LINE, min_size=1, max_size=6).map(lambda ls: "\n".join(ls).encode()),
              st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80", "\u2028".encode()]), st.integers(0, 200)),
)
SHAREGPT = st.one_of(
    st.lists(st.fixed_dictionaries({"conversations": st.lists(
        st.fixed_dictionaries({"from": st.sampled_from(["human", "gpt"]), "value": st.one_of(TEXT, JSON_VALUE)}),
        max_size=3)}), max_size=5).map(lambda v: json.dumps(v).encode()),
    JSON_VALUE.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200),
    st.lists(st.text(max_size=20), max_size=4).map(lambda v: json.dumps(v).encode()[:-1]),     # cut short
    st.builds(lambda good, tail: good + tail, st.just(b'[{"conversations": [{"value": "q"}, {"value": "a"}]}]'),
              st.sampled_from([b"", b" \n", b"]", b",[]", b"x", b" {}", b"\xff"])),              # after the list
)


def _outcome(read, *args):
    """What a reader makes of a file: ("ok", value) or ("refused", its one line)."""
    try:
        return "ok", read(*args)
    except ValueError as exc:
        return "refused", str(exc)


# ---- the checks -------------------------------------------------------------------------------

@fuzz_settings()
@given(data=JSONL, seed=st.integers(0, 1 << 30))
def test_the_dataset_checker_agrees_with_the_jsonl_format_line_for_line(tmp_path_factory, data, seed):
    from console.bench.dataset import load_dataset, open_dataset
    from console.bench.workload import draw

    path = tmp_path_factory.mktemp("jsonl") / "prompts.jsonl"
    path.write_bytes(data)
    want = _outcome(reference_jsonl, path)
    got = _outcome(lambda: [(it.prompt, it.output_len) for it in load_dataset(path, "jsonl")])
    if want[0] == "refused" and want[1].startswith("cannot read"):
        assert got[0] == "refused" and got[1].startswith(f"cannot read dataset {path}"), (data, got)
    else:
        assert got == want, data
    checked = _outcome(open_dataset, path, "jsonl")
    assert checked[0] == want[0], (data, checked)
    if want[0] == "refused":
        assert checked[1] == got[1] and "\n" not in checked[1], (data, checked)
        return
    items = want[1]
    dataset = checked[1]
    assert dataset.count == len(items)
    assert dataset.has_messages == any(isinstance(prompt, list) for prompt, _ in items)
    count = random.Random(seed).randint(1, 2 * len(items) + 1)     # fewer, and more, than the file holds
    positions = draw(len(dataset), count, seed)
    assert [(it.prompt, it.output_len) for it in dataset.take(positions)] == [items[k] for k in positions]


def _campaign_load(data: bytes, name: str, api: str, folder: Path) -> str:
    """A campaign made over a prompts file: '' when it is accepted, else its one line."""
    from console.campaign.spec import CampaignError, load

    (folder / name).write_bytes(data)
    campaign = folder / "campaign.toml"
    campaign.write_text(CAMPAIGN.format(name=name, api=api))
    try:
        load(campaign)
        return ""
    except CampaignError as exc:
        return str(exc)


def test_fuzz_campaign_jsonl_datasets_are_refused_exactly_as_the_format_says(tmp_path):
    """Before, a campaign checked only that its dataset existed: every cell launched its server and
    then failed on the format."""

    def run(data: bytes) -> str:
        shown = _campaign_load(data, "prompts.jsonl", "completions", tmp_path)
        bad = _outcome(reference_jsonl, tmp_path / "prompts.jsonl")
        chats = bad[0] == "ok" and any(isinstance(prompt, list) for prompt, _ in bad[1])
        assert bool(shown) == (bad[0] == "refused" or chats), (shown, bad)
        if shown:
            assert shown.startswith(f"{tmp_path / 'campaign.toml'}: key 'sweep.dataset': ") and "\n" not in shown
        return shown

    fuzz("campaign dataset (jsonl)", JSONL, run)


def test_fuzz_campaign_sharegpt_datasets_are_refused_exactly_as_the_format_says(tmp_path):
    def run(data: bytes) -> str:
        shown = _campaign_load(data, "prompts.json", "chat", tmp_path)
        want = _outcome(reference_sharegpt, tmp_path / "prompts.json")
        assert bool(shown) == (want[0] == "refused"), (shown, want)
        if shown:
            assert shown.startswith(f"{tmp_path / 'campaign.toml'}: key 'sweep.dataset': ") and "\n" not in shown
        return shown

    fuzz("campaign dataset (sharegpt)", SHAREGPT, run)


@pytest.fixture
def box(tmp_path):
    """A local profile whose one config's server command fails at once (nothing may get that far)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "smol-vllm.sh").write_text("#!/bin/sh\nexit 1 --max-num-seqs 1\n")
    (scripts / "smol-vllm.sh").chmod(0o755)
    out = gpudeck("profiles", "add", "box", "--local", "--scripts-dir", str(scripts), "--log-dir", str(tmp_path / "logs"))
    assert out.returncode == 0, out.stderr
    return tmp_path


def test_fuzz_bad_datasets_through_campaign_run(box, gpudeck_home):
    """`gpudeck campaign run` over a prompts file the format refuses: exit 2 and one line, nothing
    created; before, the campaign was made and its first cell launched its server."""
    tally = Tally("campaign run, bad dataset (subprocess)")
    campaign = box / "campaign.toml"
    campaign.write_text(CAMPAIGN.format(name="prompts.jsonl", api="completions"))

    def run(data: bytes) -> str:
        (box / "prompts.jsonl").write_bytes(data)
        proc = gpudeck("campaign", "run", str(campaign), "-p", "box", "--foreground", errors="replace")
        err = proc.stderr
        assert proc.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, \
            (proc.returncode, err[-600:])
        assert "key 'sweep.dataset': " in err, err
        return err

    @fuzz_settings(8)
    @given(JSONL)
    def body(data):
        (box / "prompts.jsonl").write_bytes(data)
        assume(_outcome(reference_jsonl, box / "prompts.jsonl")[0] == "refused")
        tally.check(data, run)

    body()
    print(f"fuzz {tally.name}: {tally.inputs} inputs, {len(tally.tracebacks)} failures")
    assert tally.inputs and not tally.tracebacks, f"input {tally.tracebacks[0][0]!r}\n{tally.tracebacks[0][1]}"
    assert not tally.leaks, f"input {tally.leaks[0][0]!r} showed {tally.leaks[0][1]!r}"
