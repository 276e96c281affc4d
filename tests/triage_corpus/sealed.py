"""Which corpus entries are sealed (SEALED.tsv): kept out of every test that shows verdicts,
so that rules are never tuned on them; only score_sealed.py reads their verdicts."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
SEALED = HERE / "SEALED.tsv"


def repository(url: str) -> str:
    parts = url.split("/")
    return "/".join(parts[3:5]).lower() if len(parts) > 4 and parts[2] == "github.com" else url


def sealed_sources() -> tuple[frozenset[str], frozenset[str]]:
    """(sealed repositories, sealed thread URLs)."""
    repos, threads = set(), set()
    for line in SEALED.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        kind, value = line.split("\t", 1)
        (repos if kind == "repo" else threads).add(value.strip())
    return frozenset(repos), frozenset(threads)


def is_sealed(url: str, sources: tuple[frozenset[str], frozenset[str]] | None = None) -> bool:
    repos, threads = sources or sealed_sources()
    return repository(url) in repos or url in threads
