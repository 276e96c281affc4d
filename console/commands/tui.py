"""`gpudeck` with no command (and `gpudeck tui`): open the Textual app."""
from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("tui", help="open the console (the default)")
    p.set_defaults(func=open_tui)


def open_tui(args: argparse.Namespace) -> int:
    from profiles import store

    from ..clikit import load_profile

    profile = load_profile(getattr(args, "profile", None))
    store.set_last_used(profile.name)
    from screens.app import GpudeckApp  # the one place the CLI reaches up into screens

    GpudeckApp(profile_name=profile.name, readonly=getattr(args, "readonly", False)).run()
    return 0
