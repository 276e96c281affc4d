"""Score the sealed split of the triage corpus (SEALED.tsv), once.

Prints, for the sealed entries only: class accuracy overall, per family and
per class; the confidently wrong verdicts (a wrong class that is not
`unknown`); failures called healthy; clean stops called crashes; and which
evidence kinds decided how many verdicts. Not a test: its figures go in the
closing note with the commit that sealed the split.

    .venv/bin/python -m tests.triage_corpus.score_sealed [--split 1|2] [--show-misses]

Split 1 (SEALED.tsv) was scored at the end of its round and is spent; split 2
(SEALED2.tsv) is the one to score next, once.
"""
from __future__ import annotations

import argparse
from collections import Counter, defaultdict

from console.servers.triage import CRASH_CLASSES, classify_file
from tests.triage_corpus.sealed import HERE, is_sealed, sealed_sources


def _rows(split: int) -> list[dict]:
    lines = (HERE / "INDEX.tsv").read_text().splitlines()
    head = lines[0].split("\t")
    sources = sealed_sources(split)
    rows = [dict(zip(head, line.split("\t"))) for line in lines[1:]]
    return [row for row in rows if is_sealed(row["source_url"], sources)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", type=int, choices=(1, 2), default=2)
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    rows = _rows(args.split)
    by_family: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_class: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    decided: Counter[str] = Counter()
    right = confident_wrong = 0
    healthy_failures, crashed_stops, misses = [], [], []
    for row in rows:
        verdict = classify_file(HERE / "logs" / row["file"])
        out = verdict.to_json()
        ok = verdict.cls == row["class"]
        right += ok
        for table, key in ((by_family, row["family"]), (by_class, row["class"])):
            table[key][0] += ok
            table[key][1] += 1
        if not ok and verdict.cls != "unknown":
            confident_wrong += 1
        if verdict.cls == "healthy" and row["class"] in CRASH_CLASSES:
            healthy_failures.append(row["file"])
        if row["state"] == "stopped" and row["class"] not in CRASH_CLASSES and verdict.cls in CRASH_CLASSES:
            crashed_stops.append(row["file"])
        decided[out.get("decided_by") or "+".join(out.get("sources") or []) or "none"] += 1
        if not ok:
            misses.append(f"  miss {row['file']}: want {row['class']}, got {verdict.cls} "
                          f"(confidence {out.get('confidence', '?')})")
    total = len(rows)
    print(f"sealed split {args.split}: {total} entries; class right {right}/{total} = {100 * right / total:.1f}%")
    print(f"confidently wrong: {confident_wrong}/{total} = {100 * confident_wrong / total:.1f}%")
    print(f"failures called healthy: {len(healthy_failures)} {healthy_failures}")
    print(f"clean stops called crashes: {len(crashed_stops)} {crashed_stops}")
    for title, table in (("family", by_family), ("class", by_class)):
        print(f"by {title}:")
        for key, (ok, count) in sorted(table.items()):
            print(f"  {key:22s} {ok:3d}/{count:<3d} {100 * ok / count:5.1f}%")
    print("decided by:")
    for kind, count in decided.most_common():
        print(f"  {kind:22s} {count}")
    if args.show_misses:
        print("\n".join(misses))


if __name__ == "__main__":
    main()
