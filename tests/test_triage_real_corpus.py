"""Triage over the project's own corpus of real logs (tests/triage_corpus/).

Real excerpts (at least 150) from public issues, each labelled by reading it (INDEX.tsv:
family, expected state and class, source). About a third is a held-out
split fixed by a hash of the file name before any rule was tuned; misses
are printed for the tune split only, the held-out split reports figures.

Asserted, on both splits:
  * no failure (a crash class) is called healthy;
  * no log that stops mid-load (state loading) is called healthy;
  * class accuracy is at least FLOOR_TUNE / FLOOR_HELDOUT.
State accuracy is reported, not asserted.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from console.servers.triage import CRASH_CLASSES, classify_file

CORPUS = Path(__file__).parent / "triage_corpus"
FLOOR_TUNE = 0.95
FLOOR_HELDOUT = 0.85


def _rows() -> list[dict]:
    lines = (CORPUS / "INDEX.tsv").read_text().splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:]]


def _table(title: str, counts: dict) -> list[str]:
    out = [f"  {title}"]
    for key, (right, total) in sorted(counts.items()):
        out.append(f"    {key:22s} {right:3d}/{total:<3d} {100 * right / total:5.1f}%")
    return out


def test_real_corpus(capsys):
    rows = _rows()
    assert len(rows) >= 150, "the corpus is smaller than it should be"
    report: list[str] = []
    failures_called_healthy, loading_called_healthy = [], []
    accuracy: dict[str, tuple[int, int]] = {}
    for split in ("tune", "heldout"):
        chosen = [r for r in rows if r["split"] == split]
        by_family = defaultdict(lambda: [0, 0])
        by_class = defaultdict(lambda: [0, 0])
        state_right = right = 0
        misses = []
        for row in chosen:
            verdict = classify_file(CORPUS / "logs" / row["file"])
            ok = verdict.cls == row["class"]
            right += ok
            state_right += verdict.state == row["state"]
            for table, key in ((by_family, row["family"]), (by_class, row["class"])):
                table[key][0] += ok
                table[key][1] += 1
            if not ok and split == "tune":
                misses.append(f"    miss {row['file']}: want {row['class']}/{row['state']}, "
                              f"got {verdict.cls}/{verdict.state}")
            if verdict.cls == "healthy" and row["class"] in CRASH_CLASSES:
                failures_called_healthy.append(row["file"])
            if verdict.cls == "healthy" and row["state"] == "loading":
                loading_called_healthy.append(row["file"])
        report.append(f"  {split}: class {right}/{len(chosen)} {100 * right / len(chosen):.1f}%, "
                      f"state {state_right}/{len(chosen)} {100 * state_right / len(chosen):.1f}%")
        report += _table(f"{split} by family", by_family)
        report += _table(f"{split} by class", by_class)
        report += misses
        accuracy[split] = (right, len(chosen))
    report.append(f"  failures called healthy: {len(failures_called_healthy)}; "
                  f"loading logs called healthy: {len(loading_called_healthy)}")
    with capsys.disabled():
        print()
        print("\n".join(report))
    for split, floor in (("tune", FLOOR_TUNE), ("heldout", FLOOR_HELDOUT)):
        right, total = accuracy[split]
        assert right / total >= floor, f"{split} accuracy {right}/{total} under {floor:.0%}"
    assert not failures_called_healthy, f"failures called healthy: {failures_called_healthy}"
    assert not loading_called_healthy, f"loading logs called healthy: {loading_called_healthy}"
