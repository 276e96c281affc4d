"""Shared fixtures: an isolated GPUDECK_HOME for every test, and the real peers."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from console import demo
from console.gc_pause import collector_paused
from tests.realparts import SSHD, LlamaServer, make_sshd, start_llama_server
from tests.slurm_part import SlurmCluster
from tests import tiers


# Python 3.11 fails an AST build ("AST constructor recursion depth mismatch") when a collection
# runs a finaliser mid-build; a test that left a subprocess transport behind makes such a
# finaliser. pytest parses test sources to draw a failure and its summary: no collection then.
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    with collector_paused():
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    with collector_paused():
        yield


def pytest_collection_modifyitems(config, items):
    """Mark each test with the real peers it needs (tests/tiers.py), and `peer` when it needs any."""
    for item in items:
        peers = tiers.peers_of(item) | {m.name for m in item.iter_markers() if m.name in tiers.PEERS}
        for peer in sorted(peers):
            item.add_marker(peer)
        if peers:
            item.add_marker("peer")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    tiers.running(item)
    try:
        yield
    finally:
        tiers.running(None)


ROOT = Path(__file__).resolve().parent.parent
# The real corpus (nvidia-smi texts, server logs) and model configs the tests read: a copy
# of ../shared's, with its INDEX.tsv of sources, so a clone without ../shared passes too.
SHARED = ROOT / "tests" / "fixtures" / "shared"


@pytest.fixture(autouse=True)
def gpudeck_home(tmp_path_factory, monkeypatch) -> Path:
    """Every test gets its own GPUDECK_HOME: the real home is never touched."""
    home = tmp_path_factory.mktemp("gpudeck-home")
    monkeypatch.setenv("GPUDECK_HOME", str(home))
    yield home
    # a demo world a test built names its launch permit here; gone with the world, it must not
    # refuse the next test's launches
    os.environ.pop("GPUDECK_LAUNCH_PERMIT", None)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory) -> SSHD:
    """A real OpenSSH sshd on 127.0.0.1 with throwaway keys (shared by the session)."""
    server = make_sshd(tmp_path_factory.mktemp("sshd"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def ssh_profile(sshd, gpudeck_home):
    """A saved profile that reaches the test sshd through an ssh_config alias."""
    from profiles import store
    from profiles.atomic import write_atomic
    from profiles.paths import known_hosts_file
    from profiles.profile import profile_from_dict

    write_atomic(known_hosts_file(), sshd.known_hosts.read_text())
    profile = profile_from_dict("testbox", {
        "transport": "ssh",
        "ssh": {"host": "gpudeck-test", "config_file": str(sshd.ssh_config), "connect_timeout_s": 5},
    })
    store.save(profile)
    return profile


@pytest.fixture
def scripts_profile(ssh_profile, tmp_path):
    """`ssh_profile` with its launch scripts and logs in folders of the test's own; the profile and
    the scripts folder."""
    from profiles import store

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    ssh_profile.server.scripts_dir = str(scripts)
    ssh_profile.server.log_dir = str(tmp_path / "logs")
    store.save(ssh_profile)
    return ssh_profile, scripts


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> LlamaServer:
    """A real llama.cpp server with SmolLM2-135M, shared by the session."""
    log = tmp_path_factory.mktemp("llama") / "llama-server.log"
    server = start_llama_server(log)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """One real vLLM server (CPU build, eager mode, private caches) shared by the session;
    tests that stop or kill a server start their own (tests/vllm_part.py)."""
    from tests.vllm_part import start_vllm

    server = start_vllm(tmp_path_factory.mktemp("vllm"))
    yield server
    server.stop()


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: it is part of the checkout (a copy of ../shared's corpus "
                    "and model configs)", pytrace=False)
    return SHARED


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory) -> SlurmCluster:
    """A real two-node Slurm cluster (n1, n2, four fake GPUs each), shared by the session."""
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm")).start()
    yield cluster
    cluster.stop()


@pytest.fixture
def slurm(slurm_cluster, monkeypatch) -> SlurmCluster:
    """The session's cluster, with SLURM_CONF set so gpudeck's Slurm commands reach it."""
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    return slurm_cluster


@pytest.fixture
def demo_world(tmp_path, monkeypatch):
    """The demo's world (its simulated host, sglang and fleet) for one test; the demo points
    GPUDECK_HOME and PATH at it, and monkeypatch restores them."""
    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    yield world
    world.close()


@pytest.fixture
def fast_demo_world(monkeypatch, demo_world):
    """The demo's world with simulated servers that start in 0.3 s (a campaign's visits go quicker)."""
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    return demo_world
