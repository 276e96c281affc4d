"""The one picker of a port for a server gpudeck starts: outside the kernel's ephemeral range (a
port found by binding to 0 may be taken by anyone's socket before the server binds it), free on
every address, and never the same port twice in one process."""
from __future__ import annotations

import socket

from console import free_port as fp


def test_ports_come_from_outside_the_ephemeral_range_and_are_never_handed_out_twice():
    low, high = fp.ephemeral_range()
    ports = [fp.free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(fp.LOWEST <= p <= fp.HIGHEST and not low <= p <= high for p in ports), ports


def test_a_port_handed_out_can_be_bound_on_every_address():
    port = fp.free_port()
    with socket.socket() as s:
        s.bind(("", port))
        s.listen()


def test_a_port_something_listens_on_is_never_handed_out(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))   # the kernel's pick: ours must skip it when offered it
        taken.listen()
        busy = taken.getsockname()[1]
        assert not fp.is_free(busy)
        picks = iter([busy, busy, 10001])
        monkeypatch.setattr(fp.random, "choice", lambda span: next(picks))
        monkeypatch.setattr(fp, "ephemeral_range", lambda: (60000, 60999))
        monkeypatch.setattr(fp, "_given", set())
        assert fp.free_port() == 10001


def test_the_range_file_is_read_as_untrusted_and_both_sides_of_the_range_are_used(tmp_path):
    path = tmp_path / "range"
    path.write_text("1024\t20000\n")
    assert fp.ephemeral_range(path) == (1024, 20000)
    assert fp.candidates((1024, 20000)) == [range(20001, 65536)]   # nothing below: only above it
    assert fp.candidates((32768, 60999)) == [range(10000, 32768), range(61000, 65536)]
    for junk in ("", "x y", "70000 80000", "30000 20000", "9" * 10_000):
        path.write_text(junk)
        assert fp.ephemeral_range(path) == fp.DEFAULT_EPHEMERAL
    assert fp.ephemeral_range(tmp_path / "missing") == fp.DEFAULT_EPHEMERAL
