"""Profiles on disk: round trips, validation, corrupt files left untouched."""
from __future__ import annotations

import os
import stat

import pytest

from profiles import paths, store
from profiles.profile import Profile, ProfileError, profile_from_dict


def test_local_profile_exists_from_first_start():
    assert store.names() == ["local"]
    profile = store.load("local")
    assert profile.is_local and profile.target == "local"


def test_round_trip_keeps_every_section():
    doc = {
        "transport": "ssh", "description": "8x RTX PRO 6000",
        "ssh": {"host": "rtx-box", "user": "theuser", "port": 2222, "identity_file": "~/.ssh/id_ed25519"},
        "server": {"url": "http://127.0.0.1:30000", "scripts_dir": "~/scripts", "log_dir": "~/logs",
                   "configs": ["run tp8 (memsafe).sh"]},
        "model": {"name": "GLM-5-NVFP4", "config": "/models/glm5/config.json", "quant": "nvfp4"},
        "gpu": {"name": "RTX PRO 6000 Blackwell", "count": 8},
    }
    saved = profile_from_dict("rtx", doc)
    store.save(saved)
    loaded = store.load("rtx")
    assert loaded == saved
    assert loaded.target == "ssh theuser@rtx-box:2222"
    assert loaded.server.configs == ["run tp8 (memsafe).sh"]


def test_profile_file_is_private():
    store.save(Profile(name="box", transport="ssh", ssh=profile_from_dict(
        "x", {"transport": "ssh", "ssh": {"host": "h"}}).ssh))
    mode = stat.S_IMODE(os.stat(paths.profile_file("box")).st_mode)
    assert mode == 0o600


@pytest.mark.parametrize("text, expected", [
    ("transport = 'ssh'\n[ssh]\nport = 22\n", "key 'ssh.host'"),
    ("transport = 'telnet'\n", "key 'transport': expected 'local', 'ssh' or 'prometheus'"),
    ("[ssh]\nport = 'twenty-two'\n", "key 'ssh.port': expected an integer"),
    ("[server]\nprot = 1\n", "key 'server.prot'"),
    ("[gpu]\ncount = true\n", "key 'gpu.count': expected an integer"),
    ("[server]\nconfigs = ['a', 3]\n", "key 'server.configs': expected a list of strings"),
])
def test_invalid_profile_names_file_key_and_expectation(text, expected):
    path = paths.profile_file("bad")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        store.load("bad")
    message = str(info.value)
    assert str(path) in message and expected in message
    assert "\n" not in message
    assert path.read_text() == text


def test_corrupt_toml_is_reported_with_line_and_left_untouched():
    path = paths.profile_file("broken")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "transport = 'ssh'\n[ssh]\nhost = \"unterminated\n"
    path.write_text(text)
    before = os.stat(path)
    with pytest.raises(ProfileError) as info:
        store.load("broken")
    assert f"{path}:3" in str(info.value)
    assert path.read_text() == text and os.stat(path).st_mtime_ns == before.st_mtime_ns
    good, bad = store.load_all()
    assert [p.name for p in good] == ["local"] and len(bad) == 1


def test_bad_names_are_refused():
    for name in ("../etc", "a/b", "", "-x"):
        with pytest.raises(ValueError):
            paths.profile_file(name)


def test_local_cannot_be_removed_and_others_can():
    store.save(profile_from_dict("gone", {"transport": "ssh", "ssh": {"host": "h"}}))
    store.remove("gone")
    assert not store.exists("gone")
    with pytest.raises(ProfileError):
        store.remove("local")


def test_last_used_falls_back_to_local():
    assert store.last_used() == "local"
    store.save(profile_from_dict("b", {"transport": "local"}))
    store.set_last_used("b")
    assert store.last_used() == "b"
    store.remove("b")
    assert store.last_used() == "local"
