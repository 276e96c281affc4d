"""Launch-script flags over the real sshd: the remote $HOME, unresolved variables, and what the
real llama.cpp server says it runs with, read from its own log."""
from __future__ import annotations

import asyncio
import pwd
import os
import shlex
from pathlib import Path

from console.servers.launch import compare, effective_from_log, parse_script
from console.report.sections import configs_section
from console.servers import configs as cfgs
from console.servers import lifecycle
from console.store import launches
from console.servers.monitor import ServerMonitor
from console.session import HostSession
from tests.realparts import free_port, llama_server_binary, smollm_model


def _script(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


async def test_remote_home_and_script_variables_expand_and_the_rest_is_unresolved(scripts_profile):
    profile, scripts = scripts_profile
    _script(scripts, "smol.sh", 'MODELS="$HOME/models"\n'
            'exec /opt/llama/bin/llama-server -m "$MODELS/smol.gguf" --port "$SERVE_PORT" '
            "-c 4096 -np 4 --slot-save-path ~/slots")
    session = HostSession.open(profile)
    asked: list[list[str]] = []
    real_run = session.host.run

    async def counting(argv, **kwargs):
        asked.append(list(argv))
        return await real_run(argv, **kwargs)

    session.host.run = counting
    try:
        first = cfgs.find(await cfgs.discover(session), "smol")
        again = cfgs.find(await cfgs.discover(session), "smol")
    finally:
        await session.host.close()
    home = pwd.getpwuid(os.getuid()).pw_dir  # what sshd gives this user as $HOME
    parsed = first.parsed
    assert parsed.flags["model"] == f"{home}/models/smol.gguf", "the remote $HOME was not used"
    assert parsed.raw_flags["slot-save-path"] == f"{home}/slots"
    assert parsed.flags["port"] == "$SERVE_PORT", "an unknown variable must stay as written, not empty"
    assert parsed.unresolved == {"port": ["SERVE_PORT"]}
    assert parsed.to_json()["unresolved"] == {"port": ["SERVE_PORT"]}
    assert "port: $SERVE_PORT unresolved (not set by the script, not known on the host); shown as written" \
        in first.warnings  # the Server tab, `server flags` and the report list a config's warnings
    assert again.parsed.flags["model"] == parsed.flags["model"]
    assert sum("LOGNAME" in " ".join(argv) for argv in asked) == 1, "the remote environment is read once"
    checks = {c.key: c for c in compare(parsed, {"port": 8080, "model": f"{home}/models/smol.gguf"})}
    assert checks["port"].unresolved and not checks["port"].mismatch
    assert not checks["model"].mismatch


def test_without_the_remote_environment_home_is_unresolved_not_empty():
    parsed = parse_script('llama-server -m $HOME/m.gguf --port 8080\n', "x.sh")
    assert parsed.flags["model"] == "$HOME/m.gguf" and parsed.unresolved == {"model": ["HOME"]}
    assert parse_script('llama-server -m ${DIR:-/srv}/m.gguf\n').flags["model"] == "/srv/m.gguf"


def test_the_real_llama_server_log_gives_the_effective_flags(llama_server):
    lines = llama_server.log.read_text(errors="replace").splitlines()
    found = effective_from_log(lines)
    assert found is not None and found.server == "llama.cpp", lines[:20]
    # the fixture starts it with -m MODEL --host 127.0.0.1 --port P -c 4096 -np 4
    assert found.flags["model"] == str(smollm_model())
    assert found.flags["max_running"] == 4
    assert found.flags["context_length"] == 4096
    assert (found.flags["host"], found.flags["port"]) == ("127.0.0.1", llama_server.port)


async def test_effective_column_fills_from_the_log_of_a_server_launched_over_ssh(scripts_profile):
    profile, scripts = scripts_profile
    port = free_port()
    _script(scripts, "smol-fa.sh", f"exec {shlex.quote(str(llama_server_binary()))} "
            f"-m {shlex.quote(str(smollm_model()))} --host 127.0.0.1 --port {port} -c 2048 -np 2 -t 1")
    session = HostSession.open(profile)
    record = None
    try:
        config = cfgs.find(await cfgs.discover(session), "smol-fa")
        record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        filled = asyncio.Event()
        monitor = ServerMonitor(session, record, poll_s=0.3,
                                on_state=lambda rec: filled.set() if monitor.effective else None)
        task = asyncio.create_task(monitor.run())
        try:
            await asyncio.wait_for(filled.wait(), 60)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        effective = monitor.effective
        assert effective["model"] == str(smollm_model())
        assert (effective["max_running"], effective["context_length"], effective["port"]) == (2, 2048, port)
        assert not [c for c in compare(config.parsed, effective) if c.mismatch]
    finally:
        if record is not None and record.pgid:
            await lifecycle.stop(session, record, grace_s=5)
        await session.host.close()
    assert launches.load_all(profile.name)[0].state == "stopped"


def test_the_report_calls_parsed_script_values_script_values():
    text = configs_section([{"name": "smol", "flags": {"tp": 1, "port": 8080}}], "launch records")
    assert "script value" in text and "effective value" not in text


def test_an_older_llama_server_log_gives_the_same_table():
    """Builds before the context code was renamed print `llama_new_context_with_model: ...`."""
    lines = [
        "main: HTTP server is listening, hostname: 127.0.0.1, port: 8080, http threads: 3",
        "srv    load_model: loading model '/models/smol.gguf'",
        "llama_new_context_with_model: n_seq_max     = 4",
        "llama_new_context_with_model: n_ctx         = 4096",
        "llama_new_context_with_model: flash_attn    = 1",
        "llama_kv_cache_init: kv_size = 4096, offload = 1, type_k = 'q8_0', type_v = 'q8_0', n_layer = 30",
        "main: model loaded",
        "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
    ]
    found = effective_from_log(lines)
    assert found.line == 1 and found.flags["model"] == "/models/smol.gguf"
    assert (found.flags["max_running"], found.flags["context_length"]) == (4, 4096)
    assert (found.flags["attention_backend"], found.flags["kv_dtype"]) == ("flash-attn", "q8_0")
    assert (found.flags["host"], found.flags["port"]) == ("127.0.0.1", 8080)
    script = parse_script("llama-server -m /models/smol.gguf -c 4096 -np 4 -fa on -ctk q8_0 --port 8080\n")
    assert not [c.key for c in compare(script, found.flags) if c.mismatch]
