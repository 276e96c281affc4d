"""Forty real 2025-2026 configs (tests/fixtures/roofline-corpus/CORPUS.tsv, sources in its SOURCES.tsv and the
other fixture folders'): each is priced within 2% of its checkpoint (the real index's total_size, else the
maker's parameter count) or refused for a named mechanism, never for a config key.

With the index beside the config (as on the operator's host), its tensors settle the weight-shape keys the
config model does not read; the MTP layers and other towers the checkpoint holds are counted beside the
language model, as the index shows they are there.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from console import roofline
from console.roofline.errors import RooflineError
from console.roofline.model_facts import _DTYPE_BYTES

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = FIXTURES / "roofline-corpus" / "CORPUS.tsv"


def _rows() -> list[dict[str, str]]:
    lines = [line for line in CORPUS.read_text().splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


ROWS = _rows()


def _config(row: dict[str, str], shared_dir: Path) -> Path:
    rel = row["config"]
    return shared_dir.parent / rel if rel.startswith("shared/") else FIXTURES / rel


def _load(path: Path, witnessed: bool) -> roofline.ModelFacts:
    import json

    return roofline.facts_from_config(json.loads(path.read_text()), name=path.stem, where=str(path),
                                      witnessed=witnessed)


def test_the_corpus_is_forty_real_configs_of_2025_and_2026():
    assert len(ROWS) >= 40
    assert all(row["released"][:4] in ("2025", "2026") for row in ROWS)
    assert len({row["name"] for row in ROWS}) == len(ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_priced_within_2_percent_or_refused_for_a_mechanism(row, shared_dir):
    kind, _, value = row["reference"].partition(":")
    path = _config(row, shared_dir)
    try:
        facts = _load(path, witnessed=kind in ("index", "weights"))
    except RooflineError as exc:
        assert not getattr(exc, "names_keys", False), f"refused for a key: {exc}"
        assert kind == "refused", f"refused: {exc}"
        assert value in str(exc)
        return
    assert kind != "refused", f"{row['name']} should be refused for {value}, was priced"
    params = facts.checkpoint_params(mtp=row["mtp"] == "yes", towers=row["towers"] == "yes")
    if kind in ("index", "weights"):
        if params is None:   # a tower the config names but does not describe: its bytes are unknown, not 0
            assert row["towers"] == "yes" and any(v is None for v in facts.tower_params.values())
            return
        stored = params * _DTYPE_BYTES.get(facts.checkpoint_dtype, 2)
        if facts.quantization_config:   # a quantised checkpoint: the config model's bytes with its scheme
            r = roofline.compute(facts, "H200", 8, context=0)
            stored = r.setup.totals.stored_bytes_all * (params / facts.total_params)
        assert stored == pytest.approx(int(value), rel=0.02)
    else:
        published = float(value) * 1e9
        assert (params or facts.total_params) == pytest.approx(published, rel=0.02)


def test_the_corpus_tally(shared_dir, capsys):
    """The closing note's figures: priced, refused by mechanism (which), refused by key (none)."""
    priced, mechanism, by_key = [], [], []
    for row in ROWS:
        try:
            _load(_config(row, shared_dir), witnessed=row["reference"].split(":")[0] in ("index", "weights"))
            priced.append(row["name"])
        except RooflineError as exc:
            (by_key if getattr(exc, "names_keys", False) else mechanism).append(f"{row['name']}: {str(exc)[:120]}")
    with capsys.disabled():
        print(f"\ncorpus: {len(priced)} priced, {len(mechanism)} refused by mechanism, {len(by_key)} refused by key")
        for line in mechanism:
            print("  mechanism:", line)
    assert by_key == []
    assert len(priced) + len(mechanism) == len(ROWS)
