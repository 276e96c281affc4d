"""Which corpus entries are sealed (SEALED.tsv, SEALED2.tsv): kept out of every test that shows
verdicts, so that rules are never tuned on them; only score_sealed.py reads their verdicts."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
SEALED = HERE / "SEALED.tsv"
SEALED2 = HERE / "SEALED2.tsv"
SPLITS = {1: SEALED, 2: SEALED2}


def repository(url: str) -> str:
    parts = url.split("/")
    return "/".join(parts[3:5]).lower() if len(parts) > 4 and parts[2] == "github.com" else url


def sealed_sources(split: int | None = None) -> tuple[frozenset[str], frozenset[str]]:
    """(sealed repositories, sealed thread URLs) of one split, or of every split when None."""
    repos, threads = set(), set()
    files = [SPLITS[split]] if split else list(SPLITS.values())
    for line in (line for path in files for line in path.read_text().splitlines()):
        if not line or line.startswith("#"):
            continue
        kind, value = line.split("\t", 1)
        (repos if kind == "repo" else threads).add(value.strip())
    return frozenset(repos), frozenset(threads)


def is_sealed(url: str, sources: tuple[frozenset[str], frozenset[str]] | None = None) -> bool:
    repos, threads = sources or sealed_sources()
    return repository(url) in repos or url in threads
