"""A fleet refresh looks for no module: every import it needs is done once, before the first.

httpcore asks `import sniffio` at each lock it sets up (several per request); with the
package missing, that failed import walks sys.path on every call, a few milliseconds of
each 1 Hz refresh. sniffio is a declared dependency for that reason (pyproject.toml).
"""
from __future__ import annotations

import sys

import pytest

from console.gpus.prometheus import PrometheusFleet, PromSettings
from tests.prom_peer import PromPeer, big_fleet, compact, vector


class _Lookups:
    """A meta path finder that notes every module name looked for and finds nothing."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name, path=None, target=None):
        self.names.append(name)
        return None


@pytest.fixture
def peer():
    server = PromPeer()
    server.answers["gpu"] = vector(compact(big_fleet(4, 8)))
    try:
        yield server
    finally:
        server.close()


async def test_a_refresh_after_the_first_imports_nothing(peer):
    fleet = PrometheusFleet(PromSettings(url=peer.url, scrape_interval_s=15.0))
    lookups = _Lookups()
    try:
        first = await fleet.sample()
        assert first.error is None and len(first.hosts) == 4
        sys.meta_path.insert(0, lookups)
        try:
            for _ in range(3):
                sample = await fleet.sample()
                assert sample.error is None and sum(len(h.gpus) for h in sample.hosts) == 32
        finally:
            sys.meta_path.remove(lookups)
    finally:
        await fleet.close()
    assert lookups.names == []
