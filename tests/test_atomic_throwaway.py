"""Files of a throwaway world (the demo without --keep) skip fsync; every other file keeps it."""
from __future__ import annotations

import os

from profiles import atomic


def test_fsync_is_skipped_only_under_a_throwaway_folder(tmp_path, monkeypatch):
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    monkeypatch.setattr(atomic, "_THROWAWAY", [])
    demo, kept = tmp_path / "demo", tmp_path / "kept"
    atomic.throwaway(demo)

    atomic.write_atomic(demo / "home" / "a.toml", "x = 1\n")
    assert synced == [] and (demo / "home" / "a.toml").read_text() == "x = 1\n"
    atomic.write_atomic(kept / "b.toml", "y = 2\n")
    assert len(synced) == 2     # the file, then its folder
    # a name that only starts like the throwaway folder is not inside it
    atomic.write_atomic(tmp_path / "demo-other" / "c.toml", "z = 3\n")
    assert len(synced) == 4


def test_the_demo_marks_only_its_own_temporary_world(tmp_path, monkeypatch):
    from console.demo import host

    monkeypatch.setattr(atomic, "_THROWAWAY", [])
    # setup() points this process at the demo: put everything back afterwards
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))
    monkeypatch.delenv("GPUDECK_SIM_STATE_DIR", raising=False)
    kept = host.setup(tmp_path / "kept")
    kept.stop()
    assert atomic._THROWAWAY == []          # --keep DIR: durable writes
    world = host.setup(None)
    try:
        assert atomic._THROWAWAY == [world.root.resolve()]
    finally:
        world.close()
