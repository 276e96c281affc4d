"""Copied text kept in a file: the fallback when the terminal cannot take a clipboard write.

OSC 52 (the terminal escape that sets the clipboard) is refused silently by
many setups (tmux's default `set-clipboard external`, most SSH chains), so a
copy is always also written to a file in the profile's data folder and its
path is shown: the operator can always `cat` it.
"""
from __future__ import annotations

import os
from pathlib import Path

from profiles.atomic import write_atomic
from profiles.paths import profile_data_dir


def clip_file(profile: str) -> Path:
    return profile_data_dir(profile) / "clipboard.txt"


def save_clip(profile: str, text: str) -> Path:
    path = clip_file(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)
    return path


def osc52_allowed(env: dict[str, str] | None = None) -> bool:
    """Whether to send OSC 52: off when GPUDECK_CLIPBOARD=file, and inside tmux unless it says it passes it on."""
    env = dict(os.environ) if env is None else env
    choice = env.get("GPUDECK_CLIPBOARD", "").lower()
    if choice in ("file", "off"):
        return False
    if choice == "osc52":
        return True
    return "TMUX" not in env  # tmux drops an application's OSC 52 unless set-clipboard is on
