"""`gpudeck` with no command (and `gpudeck tui`): open the Textual app."""
from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("tui", help="open the console (the default)")
    p.set_defaults(func=open_tui)


def open_tui(args: argparse.Namespace) -> int:
    from profiles import store

    from .kit import load_profile

    profile = load_profile(getattr(args, "profile", None))
    store.set_last_used(profile.name)
    if profile.is_prometheus:
        return open_fleet(profile)
    from screens.app import GpudeckApp  # the one place the CLI reaches up into screens

    GpudeckApp(profile_name=profile.name, readonly=getattr(args, "readonly", False)).run()
    return 0


def open_fleet(profile) -> int:
    """A Prometheus profile opens the fleet view: there is no shell on its hosts to launch or bench from."""
    from console.gpus.prometheus import PrometheusError, PrometheusFleet

    from .kit import CLIError
    from .prom_profiles import settings_for

    try:
        fleet = PrometheusFleet(settings_for(profile), simulated=profile.ui.simulated)
    except PrometheusError as exc:
        raise CLIError(f"{profile.name}: {exc}") from None
    from screens.fleet_app import FleetApp  # the CLI's TUI command may reach up into screens

    FleetApp(fleet, profile.name).run()
    return 0
