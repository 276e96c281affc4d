"""Unpack a bundle of labelled log excerpts into files and rewrite INDEX.tsv.

A bundle section is
    === FILE | FAMILY | STATE | CLASS | SOURCE_URL
    <the excerpt, whole lines as posted>
The split (tune or heldout) is fixed by a hash of the file name and source
URL when the entry is first written, before any rule is tuned on it, and is
never changed afterwards: about one file in three is held out.

`repo_split` holds out whole source repositories instead (a hash of the
repository's owner/name from the source URL): excerpts of one repository
share its wording, so a split by file lets a rule tuned on one issue of a
repository pass the held-out excerpts of the same repository. It is computed
from the URL alone, so it is the same for every entry of a repository.

    python tests/triage_corpus/build_index.py BUNDLE...
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
INDEX = HERE / "INDEX.tsv"
COLUMNS = ["file", "family", "state", "class", "split", "source_url", "repo_split"]


def split_for(name: str, url: str) -> str:
    digest = hashlib.sha256(f"{name}\t{url}".encode()).digest()
    return "heldout" if digest[0] % 3 == 0 else "tune"


def repository(url: str) -> str:
    """owner/name of a GitHub source URL (the URL itself for any other source)."""
    parts = url.split("/")
    return "/".join(parts[3:5]).lower() if len(parts) > 4 and parts[2] == "github.com" else url


def repo_split_for(url: str) -> str:
    digest = hashlib.sha256(repository(url).encode()).digest()
    return "heldout" if digest[0] % 3 == 0 else "tune"


def read_index() -> dict[str, dict]:
    rows = {}
    if INDEX.exists():
        lines = INDEX.read_text().splitlines()
        for line in lines[1:]:
            row = dict(zip(COLUMNS, line.split("\t")))
            rows[row["file"]] = row
    return rows


def main(paths: list[str]) -> None:
    rows = read_index()
    for path in paths:
        text = Path(path).read_text()
        for section in text.split("\n=== ")[1:] if not text.startswith("=== ") else ("\n" + text).split("\n=== ")[1:]:
            head, _, body = section.partition("\n")
            name, family, state, cls, url = [part.strip() for part in head.split("|")]
            body = body.rstrip("\n") + "\n"
            target = HERE / "logs" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(body)
            old = rows.get(name)
            split = old["split"] if old else split_for(name, url)
            rows[name] = {"file": name, "family": family, "state": state, "class": cls, "split": split,
                          "source_url": url}
    for row in rows.values():
        row["repo_split"] = repo_split_for(row["source_url"])
    out = ["\t".join(COLUMNS)] + ["\t".join(rows[k][c] for c in COLUMNS) for k in sorted(rows)]
    INDEX.write_text("\n".join(out) + "\n")
    print(f"{len(rows)} entries")


if __name__ == "__main__":
    main(sys.argv[1:])
