"""The tiers' marks are read from the tests' code (tests/tiers.py): a helper that reaches a peer
marks every test that calls it, a fixture's closure counts, and a reach the reading missed fails."""
from __future__ import annotations

import importlib
import types

import pytest

from tests import tiers

# by name only: naming them here would mark these tests too (tests/tiers_samples.py)
SAMPLES = importlib.import_module("tests.tiers_samples")


def _sample(name: str):
    return getattr(SAMPLES, name)


class _Fixtures:
    def __init__(self, *funcs):
        self.name2fixturedefs = {f.__name__: [types.SimpleNamespace(func=f)] for f in funcs}


def _item(function, *fixtures):
    return types.SimpleNamespace(function=function, _fixtureinfo=_Fixtures(*fixtures))


def test_a_helper_chain_to_a_peer_marks_the_test():
    assert tiers.peers_of(_item(_sample("through_a_helper"))) == {"llama"}
    assert tiers.peers_of(_item(_sample("through_the_module"))) == {"sshd"}
    assert tiers.peers_of(_item(_sample("through_a_closure"))) == {"llama"}


def test_code_that_reaches_no_peer_is_left_in_the_fast_tier():
    assert tiers.peers_of(_item(_sample("no_peer"))) == set()


def test_a_fixture_that_starts_a_peer_marks_the_tests_that_ask_for_it():
    assert tiers.peers_of(_item(_sample("no_peer"), _sample("through_a_helper"))) == {"llama"}


def test_the_suites_own_fixtures_mark_their_users(request):
    """Every collected test asking for the session's sshd, llama.cpp or Slurm carries the marker."""
    wanted = {"sshd": "sshd", "ssh_profile": "sshd", "llama_server": "llama", "slurm": "slurm"}
    for item in request.session.items:   # what this run selected: the whole suite in the full tier
        for fixture, peer in wanted.items():
            if fixture in item.fixturenames:
                assert item.get_closest_marker(peer) and item.get_closest_marker("peer"), item.nodeid
    assert request.node.get_closest_marker("peer") is None


def test_reaching_a_peer_unmarked_fails_the_test(request):
    tiers.running(types.SimpleNamespace(iter_markers=lambda: iter(()), nodeid="tests/x.py::t"))
    try:
        with pytest.raises(pytest.fail.Exception, match="reaches a real llama"):
            _sample("starts_llama")()
    finally:
        tiers.running(request.node)


def test_a_marked_test_may_reach_its_peer(request):
    marked = types.SimpleNamespace(iter_markers=lambda: iter([pytest.mark.llama.mark]), nodeid="t")
    tiers.running(marked)
    try:
        tiers.need("llama")  # no failure
        with pytest.raises(pytest.fail.Exception):
            tiers.need("sshd")
    finally:
        tiers.running(request.node)


def test_a_fixture_asked_for_by_name_marks_the_test_with_what_it_needs(request):
    """`request.getfixturevalue("ssh_profile")` reaches sshd through ssh_profile's own fixtures."""
    class Proxy:   # the running test as pytest knows it, with the sample's code as its function
        function = _sample("asks_by_name")
        _fixtureinfo = _Fixtures()

        def __getattr__(self, name):
            return getattr(request.node, name)

    assert tiers.peers_of(Proxy()) == {"sshd"}
