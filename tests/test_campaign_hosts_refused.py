"""`campaign run --hosts`: a refused start leaves no campaign, and two profiles of one server are refused."""
from __future__ import annotations

import json
import os

import pytest

from console.campaign import lock as locks
from console.cli import main
from console.store import campaigns as st

CAMPAIGN = ("[sweep]\nlevels = [1]\ninput_len = 16\noutput_len = 8\nnum_prompts = 2\nrepeats = 1\n\n"
            '[[config]]\nname = "a"\n\n[[config]]\nname = "b"\n')


def _setup(tmp_path, urls: dict[str, str]):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name, url in urls.items():
        assert main(["profiles", "add", name, "--local", "--scripts-dir", str(scripts), "--url", url,
                     "--log-dir", str(tmp_path / f"logs-{name}")]) == 0
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(CAMPAIGN)
    return campaign


def _campaigns(profile: str, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["campaign", "list", "-p", profile, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["campaigns"]


def test_an_unknown_host_leaves_no_campaign(tmp_path, capsys):
    campaign = _setup(tmp_path, {"h1": "http://127.0.0.1:18101"})
    assert main(["campaign", "run", str(campaign), "-p", "h1", "--hosts", "h1,nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert _campaigns("h1", capsys) == []


def test_a_host_another_campaign_drives_is_refused_before_anything_is_made(tmp_path, capsys):
    campaign = _setup(tmp_path, {"h1": "http://127.0.0.1:18101", "h2": "http://127.0.0.1:18102"})
    locks.acquire(locks.local_identity(), 18102, "campaign-other", "elsewhere", pid=os.getpid())
    assert main(["campaign", "run", str(campaign), "-p", "h1", "--hosts", "h1,h2"]) == 1
    err = capsys.readouterr().err
    assert "campaign-other" in err and "port 18102" in err
    assert _campaigns("h1", capsys) == []


def test_a_driver_refused_by_a_lock_leaves_a_refused_campaign_not_a_running_one(tmp_path, capsys):
    campaign = _setup(tmp_path, {"h1": "http://127.0.0.1:18101", "h2": "http://127.0.0.1:18102"})
    from console.campaign.control import create

    state = create("h1", campaign, hosts="h1,h2")
    # another campaign takes h2 between the start's check and the driver's own lock
    locks.acquire(locks.local_identity(), 18102, "campaign-other", "elsewhere", pid=os.getpid())
    assert main(["campaign", "_drive", state.id, "-p", "h1"]) == 1
    shown = _campaigns("h1", capsys)
    assert [(c["status"], c["driver_gone"]) for c in shown] == [("failed", False)]
    note = st.load("h1", state.id).note
    assert note.startswith("refused: ") and "campaign-other" in note


def test_two_profiles_of_one_server_are_refused_in_one_line(tmp_path, capsys):
    campaign = _setup(tmp_path, {"h1": "http://127.0.0.1:18101", "alias": "http://localhost:18101",
                                 "h3": "http://127.0.0.1:18103"})
    assert main(["campaign", "run", str(campaign), "-p", "h1", "--hosts", "h1,alias,h3"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "h1 and alias reach the same server" in err and "18101" in err
    assert _campaigns("h1", capsys) == []


def test_one_profile_named_twice_is_refused(tmp_path, capsys):
    campaign = _setup(tmp_path, {"h1": "http://127.0.0.1:18101"})
    assert main(["campaign", "run", str(campaign), "-p", "h1", "--hosts", "h1,h1"]) == 2
    assert "twice" in capsys.readouterr().err
    assert _campaigns("h1", capsys) == []


def test_a_start_refused_after_the_campaign_was_made_leaves_no_campaign(tmp_path, capsys):
    """The Campaign tab (and `campaign run`) make the campaign, then start its driver: a host taken
    in between refuses the start, and the campaign that never ran goes with the refusal."""
    from console.campaign import control

    campaign = _setup(tmp_path, {"h1": "http://127.0.0.1:18101", "h2": "http://127.0.0.1:18102"})
    state = control.create("h1", campaign, hosts="h1,h2")
    locks.acquire(locks.local_identity(), 18102, "campaign-other", "elsewhere", pid=os.getpid())
    with pytest.raises(control.ControlError, match="campaign-other"):
        control.start(state)
    assert _campaigns("h1", capsys) == [] and not state.dir.exists()


def test_an_ssh_alias_and_the_address_behind_it_are_one_server(ssh_profile, sshd, tmp_path, capsys):
    """The machine is told by its host key: an ~/.ssh/config alias and user@address:port are one host."""
    from profiles import store

    ssh_profile.server.url = "http://127.0.0.1:18101"
    store.save(ssh_profile)
    assert main(["profiles", "add", "byaddr", "--ssh", f"{sshd.user}@127.0.0.1:{sshd.port}",
                 "--identity-file", str(sshd.client_key), "--url", "http://127.0.0.1:18101"]) == 0
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(CAMPAIGN)
    assert main(["campaign", "run", str(campaign), "-p", "testbox", "--hosts", "testbox,byaddr"]) == 1
    assert "testbox and byaddr reach the same server" in capsys.readouterr().err
    assert _campaigns("testbox", capsys) == []
