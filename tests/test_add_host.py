"""The host switcher adds a host: the form saves a profile, the key is trusted on y, the check says reachable."""
from __future__ import annotations

import pytest

from console.hosts.setup import SetupError, new_ssh_profile
from profiles import store
from profiles.paths import known_hosts_file
from screens.add_host import AddHost
from screens.app import GpudeckApp
from screens.confirm import Confirm
from tests.harness import wait_until


async def test_add_trust_check_and_open(sshd, gpudeck_home):
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("H")
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, AddHost), what="the form")
        form = app.screen
        for key, value in (("name", "newbox"), ("target", f"{sshd.user}@127.0.0.1:{sshd.port}"),
                           ("identity", str(sshd.client_key))):
            form.query_one(f"#ah-{key}").value = value
        form.query_one("#ah-name").focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), what="the trust question")
        assert "Trust 127.0.0.1" in str(app.screen.query("Static").first().render())
        await pilot.press("y")
        status = form.query_one("#ah-status")
        await wait_until(pilot, lambda: "reachable in" in str(status.render()), what="the check")
        assert str(sshd.port) in known_hosts_file().read_text()
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.current == "newbox", what="the new host opened")
        assert "newbox" in app.fleet.names()


def test_bad_values_are_refused_with_a_reason(gpudeck_home):
    with pytest.raises(SetupError, match="expected"):
        new_ssh_profile("box", "user@")
    with pytest.raises(SetupError):
        new_ssh_profile("../evil", "user@host")
    new_ssh_profile("box", "user@host:2222")
    assert store.load("box").ssh.port == 2222
    with pytest.raises(SetupError, match="exists"):
        new_ssh_profile("box", "user@host")
