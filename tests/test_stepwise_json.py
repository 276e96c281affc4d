"""console/stepwise_json.py: what `json.loads` gives, while no one C call decodes more than a run.

The fleet reads a big Prometheus answer on a worker thread; a C call keeps the interpreter until
it returns, so one `json.loads` of a 16 MB answer held every key in the view for 200 ms. These
tests hold the stepwise decoder to json.loads on valid and broken input, and bound what the C
scanner is handed in one call.
"""
from __future__ import annotations

import json
import random

import pytest

from console import stepwise_json
from tests.prom_peer import big_fleet, compact


def _stretches(body, **kwargs) -> list[tuple[int, int]]:
    seen: list[tuple[int, int]] = []
    assert stepwise_json.loads(body, scanned=lambda a, b: seen.append((a, b)), **kwargs) == json.loads(body)
    return seen


def _random_value(rng: random.Random, depth: int = 0):
    kinds = ["int", "float", "str", "bool", "null"] + (["list", "dict"] * 2 if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "int":
        return rng.randint(-10**12, 10**12)
    if kind == "float":
        return rng.choice([rng.uniform(-1e6, 1e6), float("nan"), float("inf"), 0.0, -0.0, 1e-300])
    if kind == "str":
        # the strings a cut could be fooled by: brackets, separators, quotes, escapes, non-ASCII
        return "".join(rng.choice(['},{', '}, {', '"', '\\', '[', ']', ':', ',', 'é', '\u2028', '😀', 'a', ' '])
                       for _ in range(rng.randint(0, 6)))
    if kind in ("bool", "null"):
        return rng.choice([True, False, None])
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    return {str(_random_value(rng, 9)): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 6))}


def _prometheus_like(rng: random.Random, members: int) -> dict:
    result = [{"metric": {"__name__": "x", "label": _random_value(rng, 9) if rng.random() < 0.5 else "a},{b"},
               "value": [1.5, str(_random_value(rng, 9))], "extra": _random_value(rng, 2)}
              for _ in range(members)]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


DUMPS = [lambda d: json.dumps(d), lambda d: json.dumps(d, separators=(",", ":")),
         lambda d: json.dumps(d, indent=2), lambda d: json.dumps(d, indent="\t", ensure_ascii=False),
         lambda d: " \n" + json.dumps(d, separators=(" , ", " : ")) + "\r\n "]


@pytest.mark.parametrize("chunk", [1, 40, 1000, stepwise_json.CHUNK])
def test_it_decodes_what_json_loads_decodes(monkeypatch, chunk):
    monkeypatch.setattr(stepwise_json, "CHUNK", chunk)
    rng = random.Random(chunk)
    for i in range(60):
        doc = _prometheus_like(rng, rng.randint(0, 40)) if i % 2 else _random_value(rng)
        for dump in DUMPS:
            text = dump(doc)
            for body in (text, text.encode("utf-8"), bytearray(text.encode("utf-8")), text.encode("utf-16")):
                got, want = stepwise_json.loads(body), json.loads(body)
                assert json.dumps(got) == json.dumps(want)     # NaN != NaN: compared as text
                for walked in (0, 1, 5):
                    assert json.dumps(stepwise_json.loads(body, walked=walked)) == json.dumps(want)


def _outcome(fn, body):
    try:
        return "ok", json.dumps(fn(body))
    except ValueError as exc:
        return type(exc).__name__, getattr(exc, "pos", None)
    except RecursionError:
        return "RecursionError", None


@pytest.mark.parametrize("chunk", [1, 30])
def test_it_refuses_what_json_loads_refuses_with_the_same_error_and_place(monkeypatch, chunk):
    monkeypatch.setattr(stepwise_json, "CHUNK", chunk)
    rng = random.Random(7)
    text = json.dumps(_prometheus_like(rng, 8))
    broken = [text[:cut] for cut in range(0, len(text), 7)]                      # cut short anywhere
    broken += [text[:at] + junk + text[at:] for at in range(0, len(text), 11)   # a stray character anywhere
               for junk in (",", "}", "]", "x", '"')]
    broken += ["", " ", "{", "[1,]", '{"a":1,}', '{"a" 1}', "[1 2]", "{1:2}", "[] []", '"\\x"', "\ufeff[]",
               "[" * 100_000 + "]" * 100_000, "nul", "[NaN, -Infinity]", '{"a":1}x', b"\xff\xfe\x00"]
    for body in broken:
        assert _outcome(stepwise_json.loads, body) == _outcome(json.loads, body), body[:80]


def test_a_big_fleet_answer_reaches_the_scanner_a_run_at_a_time():
    answer = compact(big_fleet(300, 8))         # 2,400 GPUs, the shape gpudeck asks for
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": answer}},
                      separators=(",", ":")).encode()
    longest_member = max(len(json.dumps(m, separators=(",", ":"))) for m in answer)
    stretches = _stretches(body)
    assert len(body) > 20 * stepwise_json.CHUNK
    assert max(b - a for a, b in stretches) <= stepwise_json.CHUNK + longest_member
    assert len(stretches) < len(answer) / 50                       # runs, not one call per member


def test_cuts_fooled_by_labels_cost_at_most_one_extra_pass(monkeypatch):
    """Every member's label is full of `},{`: nearly every run is refused, and no character is tried twice over."""
    monkeypatch.setattr(stepwise_json, "CHUNK", 1000)   # a run holds about a dozen members
    rng = random.Random(3)   # labels of many lengths, so that cuts do not fall in step with members
    result = [{"metric": {"Hostname": "},{" * rng.randint(1, 60), "gpu": str(i)}, "value": [1, "2"]}
              for i in range(2000)]
    body = json.dumps({"status": "success", "data": {"result": result}}, separators=(",", ":"))
    stretches = _stretches(body)
    runs = sum(1 for a, _b in stretches if a == 0)             # a run is handed over as a text of its own
    assert runs > 100
    assert sum(b - a for a, b in stretches) <= 2 * len(body)
