"""A changed host key in the TUI: not an outage but a refusal only the operator can lift. A banner
over every tab carries the CLI's whole message (both fingerprints, the `trust --replace` fix), and
ctrl+r reconnects at once instead of waiting out the backoff. Real sshd."""
from __future__ import annotations

import subprocess

from profiles.atomic import write_atomic
from profiles.paths import known_hosts_file
from screens.app import GpudeckApp
from tests.harness import wait_until


def _fingerprint(pub) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


async def test_changed_host_key_banner_on_every_tab_and_reconnect_now(ssh_profile, sshd, tmp_path):
    right = known_hosts_file().read_text()
    other = tmp_path / "other_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    algorithm, blob = other.with_suffix(".pub").read_text().split()[:2]
    patterns = right.split()[0]
    write_atomic(known_hosts_file(), f"{patterns} {algorithm} {blob}\n")  # the host "was reinstalled"

    app = GpudeckApp(profile_name="testbox")
    async with app.run_test(size=(160, 45)) as pilot:
        banner = app.query_one("#host-alert")
        await wait_until(pilot, lambda: banner.display, what="the banner")
        text = str(banner.render())
        assert "host key CHANGED" in text and "--replace" in text
        assert _fingerprint(sshd.host_key_pub) in text  # the fingerprint the host offers now
        TAB_IDS = {"2": "server", "3": "bench", "4": "roofline", "5": "tasks", "6": "campaign"}
        for tab in "23456":
            await pilot.press(tab)
            await wait_until(pilot, lambda: app.tabs.active == TAB_IDS[tab], what=f"tab {tab}")
            await wait_until(pilot, lambda: banner.region.height >= 1, what="the banner laid out")
            assert banner.display  # drawn above whichever tab is open
        assert "ctrl+r" in app.active_bindings
        write_atomic(known_hosts_file(), right)  # the operator ran `gpudeck profiles trust testbox --replace`
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: app.fleet.hosts["testbox"].status.state == "connected", seconds=8,
                     what="the reconnect")
        await wait_until(pilot, lambda: not banner.display, seconds=3, what="the banner to go")
