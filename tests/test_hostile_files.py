"""Files at gpudeck's paths, or handed to it, that are no regular file of a sane size: a FIFO, a
device, a sparse file of gigabytes. Each is one line naming it; nothing waits on it or reads it whole."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from profiles import paths, store
from screens.app import GpudeckApp
from tests.harness import wait_until


def _gpudeck(*args):
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_triage_refuses_what_is_not_a_regular_file(tmp_path, kind):
    target = "/dev/zero"
    if kind == "fifo":
        target = str(tmp_path / "server.log")
        os.mkfifo(target)
    out = _gpudeck("triage", target)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [f"gpudeck: {target}: not a regular file"]


def _hostile_profiles() -> tuple[str, str]:
    """A FIFO and a 64 MiB sparse file among the profiles, beside the `local` one."""
    store.ensure_local()
    fifo, sparse = paths.profiles_dir() / "pipe.toml", paths.profiles_dir() / "sparse.toml"
    os.mkfifo(fifo)
    with open(sparse, "wb") as fh:
        fh.truncate(64 << 20)
    return str(fifo), str(sparse)


def test_profiles_list_names_each_unreadable_profile():
    fifo, sparse = _hostile_profiles()
    out = _gpudeck("profiles", "list")
    assert out.returncode == 0
    assert out.stdout.splitlines() == ["* local  local  this machine",
                                       f"! {fifo}: unreadable (not a regular file)",
                                       f"! {sparse}: unreadable ({64 << 20} bytes, over the {1 << 20}-byte limit)"]


async def test_the_console_starts_beside_unreadable_profiles():
    fifo, sparse = _hostile_profiles()
    done = threading.Event()

    def unblock() -> None:
        """Should a reader wait on the FIFO, a writer comes and goes after 20 s: the test then fails
        on its assertions rather than hanging."""
        if not done.wait(20):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
    threading.Thread(target=unblock, daemon=True).start()
    try:
        app = GpudeckApp()
        assert [line.split(":")[0] for line in app.profile_errors] == [fifo, sparse]
        assert all("unreadable" in line for line in app.profile_errors)
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_until(pilot, app.started.is_set, what="the console started")
            assert app.current == "local" and not done.is_set()
    finally:
        done.set()


def test_a_huge_user_gpu_catalogue_is_one_line_naming_it():
    from console.roofline import RooflineError, load_catalogue, user_catalogue_path

    user = user_catalogue_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("# a comment\n" * ((1 << 20) // 12 + 1))   # valid TOML, past what any catalogue holds
    with pytest.raises(RooflineError, match=rf"^GPU catalogue {user}: \d+ bytes, over the 1048576-byte limit$"):
        load_catalogue()
