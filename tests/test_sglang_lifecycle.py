"""A real sglang (0.5.23, CPU engine) through gpudeck's own launch path: a launch script in the
scripts dir, launched, read and stopped with `k`. With GPUDECK_SAVE_SGLANG_LOGS=DIR set, the
log is copied there (how tests/fixtures/logs/sglang-cpu-0.5.23/ was made)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from console.servers import configs as cfgs
from console.servers import lifecycle
from console.store import launches as records
from console.store.crashes import read_crashes
from console.servers.launch import compare
from console.session import HostSession
from profiles import store
from tests.realparts import free_port
from tests.sglang_part import launch_script, sglang_assets
from tests.test_vllm_lifecycle import _cleanup_launches, _follow, _scripts, _write, _zombie  # noqa: F401
from tests.vllm_part import group_processes


async def test_sglang_launch_ready_flags_and_clean_stop(tmp_path):
    """`l`, ready from the log and /health, the effective args read from sglang's own
    `server_args={...}` line equal to the script's, and `k` leaves nothing, as a stop."""
    sglang_assets()
    profile = store.load("local")
    scripts = _scripts(profile, tmp_path)
    port = free_port()
    _write(scripts, "smol-sglang", launch_script(tmp_path / "private", port))
    session = HostSession.open(profile)
    config = cfgs.find(await cfgs.discover(session), "smol-sglang")
    assert config is not None and config.parsed is not None and config.parsed.server == "sglang", config
    assert config.port == port and config.flags["context_length"] == 1024
    record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
    monitor, task, lines, crash_docs = await _follow(session, record, ("ready", "crashed", "stopped"))
    assert record.state == "ready", lines[-20:]
    assert monitor.triage.result().ready_seen, lines[-20:]
    effective = monitor.effective
    assert effective is not None, "no `server_args=` line read from the log"
    assert effective["port"] == port and effective["context_length"] == 1024
    assert effective["mem_fraction"] == 0.05
    assert [c.key for c in compare(config.parsed, effective) if c.mismatch] == []
    assert records.get(profile.name, record.id).effective["context_length"] == 1024

    processes = group_processes(record.pgid)
    assert any("sglang::scheduler" in cmd for cmd in processes.values()), processes
    result = await lifecycle.stop(session, record)
    await task
    target = os.environ.get("GPUDECK_SAVE_SGLANG_LOGS")
    if target and record.log:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(record.log, Path(target) / "sigterm-group-idle.log")
    assert result.clean, result.to_json()
    assert record.state == "stopped" and not crash_docs, (record, crash_docs)
    assert group_processes(record.pgid) == {}
    for pid in processes:
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"pid {pid} outlived the stop"
    assert read_crashes(profile.name).records == []
