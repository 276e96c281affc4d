"""The launch wrapper's `.pgid` file is read one way: bounded, and only a plausible group id counts."""
from __future__ import annotations

import os

import pytest

from console.servers import pgid_file


@pytest.mark.parametrize("text, group", [
    ("4242\n", 4242), (b"4242", 4242), ("  77 \n", 77),
    ("", None), ("0\n", None), ("1\n", None),             # group 0/1 would reach processes not the server's
    ("-5", None), ("12 13", None), ("12;kill", None), ("٣٤", None),  # not one ASCII whole number
    ("9" * 40, None), (str(1 << 31), None),               # too long, past the largest pid
])
def test_only_one_plausible_group_id_is_taken(text, group):
    assert pgid_file.parse(text) == group


def test_a_local_file_is_read_bounded_and_a_fifo_does_not_block(tmp_path):
    exit_file = str(tmp_path / "srv.log.exit")
    assert pgid_file.read_local(exit_file) is None                      # not written yet
    with open(pgid_file.pgid_path(exit_file), "w") as fh:
        fh.write("31337\n")
    assert pgid_file.read_local(exit_file) == 31337
    with open(pgid_file.pgid_path(exit_file), "w") as fh:
        fh.write("1" * 10_000)                                          # not what the wrapper writes
    assert pgid_file.read_local(exit_file) is None
    os.unlink(pgid_file.pgid_path(exit_file))
    os.mkfifo(pgid_file.pgid_path(exit_file))                           # a plain open would wait for a writer
    assert pgid_file.read_local(exit_file) is None


async def test_the_host_read_is_bounded_and_parsed(tmp_path):
    from console.hosts.local import LocalHost

    exit_file = str(tmp_path / "srv.log.exit")
    with open(pgid_file.pgid_path(exit_file), "w") as fh:
        fh.write("4242\n" + "9" * 100_000)
    got = await LocalHost().run(pgid_file.remote_read(exit_file), timeout=10)
    assert len(got.stdout) == pgid_file.MAX_BYTES + 1 and pgid_file.parse(got.stdout) is None
    with open(pgid_file.pgid_path(exit_file), "w") as fh:
        fh.write("4242\n")
    got = await LocalHost().run(pgid_file.remote_read(exit_file), timeout=10)
    assert pgid_file.parse(got.stdout) == 4242
