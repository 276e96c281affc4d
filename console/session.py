"""One profile with its live `Host`: what engine calls take (the HostRuntime holds one per profile)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from profiles import paths
from profiles.profile import Profile

from .hosts import Host, host_for


@dataclass
class HostSession:
    """One profile, its live `Host`, and whether destructive actions are allowed."""

    profile: Profile
    host: Host
    readonly: bool = False

    @classmethod
    def open(cls, profile: Profile, readonly: bool = False, measure_latency: bool = True) -> "HostSession":
        """`measure_latency=False`: no ping on connecting, for a command that runs once and leaves."""
        return cls(profile=profile, host=host_for(profile, measure_latency), readonly=readonly)

    @property
    def name(self) -> str:
        return self.profile.name

    @property
    def data_dir(self) -> Path:
        """tasks.toml, runs/, crashes/, servers/ of this profile."""
        return paths.profile_data_dir(self.profile.name)

    @property
    def simulated(self) -> bool:
        return self.profile.ui.simulated
