"""Helpers that reach peers, read by tests/test_tiers.py through their names (a test that named
them in its own code would itself be marked, and leave the fast tier)."""
from __future__ import annotations

from tests import realparts
from tests.realparts import llama_server_binary


def starts_llama():
    return llama_server_binary()


def through_a_helper():
    return starts_llama()


def through_the_module():
    return realparts.make_sshd


def through_a_closure():
    start = starts_llama

    def inner():
        return start()
    return inner()


def no_peer():
    return realparts.free_port()


def asks_by_name(request):
    return request.getfixturevalue("ssh_profile")
