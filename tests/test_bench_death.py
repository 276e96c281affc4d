"""A server that dies mid-level: the level fails with the reason named, and nothing is lost."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.realparts import free_port, start_llama_server

ROOT = Path(__file__).resolve().parent.parent


def test_server_killed_mid_level(tmp_path, gpudeck_home):
    server = start_llama_server(tmp_path / "llama.log")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "console.bench", "--url", server.url, "--concurrency", "2,4",
             "--input-len", "8", "--output-len", "48", "--num-prompts", "8", "--warmup", "0", "--events"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
        seen = []
        for line in proc.stdout:
            event = json.loads(line)
            seen.append(event)
            if event["event"] == "request":
                server.proc.kill()  # the server dies with requests in flight
                server.proc.wait(10)
                break
        seen += [json.loads(line) for line in proc.stdout]
        rc = proc.wait(120)
        stderr = proc.stderr.read()
    finally:
        server.stop()
    assert rc == 3
    assert "Traceback" not in stderr
    ends = [e for e in seen if e["event"] == "level-end"]
    first, second = ends[0]["summary"], ends[1]["summary"]
    assert first["status"] == "failed"
    assert first["completed"] >= 1 and first["failed"] >= 1
    assert set(first["errors"]) <= {"stream cut off mid-response", "connection refused", "server disconnected",
                                    "connection reset"}
    assert first["server_died"]["message"].startswith("connection refused from ")
    assert second["status"] == "skipped" and second["skipped_because"] == "level 2 failed"
    run_end = seen[-1]
    assert run_end["event"] == "run-end" and run_end["exit_code"] == 3
    saved = json.loads(Path(run_end["path"]).read_text())
    assert [lv["status"] for lv in saved["levels"]] == ["failed", "skipped"]
    assert saved["levels"][0]["ttft_ms"]["median"] is not None  # the finished requests' metrics are kept
    rows = [json.loads(r) for r in Path(saved["requests_path"]).read_text().splitlines()]
    assert len(rows) == 8
    assert any(r["ok"] for r in rows) and any(r["error"] for r in rows)


def test_dead_endpoint_does_not_start_and_says_why(gpudeck_home):
    url = f"http://127.0.0.1:{free_port()}"
    out = subprocess.run([sys.executable, "-m", "console.bench", "--url", url, "--concurrency", "1,2",
                          "--num-prompts", "2", "--keep-going", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert out.returncode == 4, out.stderr
    assert out.stderr.count("\n") == 1 and "not started" in out.stderr and "connection refused" in out.stderr
    doc = json.loads(out.stdout)
    assert doc["status"] == "not started" and doc["levels"] == []
    runs = gpudeck_home / "data" / "profiles" / "local" / "runs"
    assert not runs.exists() or not list(runs.iterdir())  # the reserved run id was given back


def test_server_silent_after_sigterm_ends_the_level_at_once(tmp_path, gpudeck_home):
    """llama.cpp after SIGTERM keeps its streams open and sends nothing: one stall period, not one per request."""
    import signal

    server = start_llama_server(tmp_path / "llama.log")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "console.bench", "--url", server.url, "--concurrency", "2,4",
             "--input-len", "8", "--output-len", "64", "--num-prompts", "8", "--warmup", "0",
             "--stall-timeout", "3", "--events"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
        seen = []
        for line in proc.stdout:
            seen.append(json.loads(line))
            if seen[-1]["event"] == "request":
                server.proc.send_signal(signal.SIGTERM)
                break
        seen += [json.loads(line) for line in proc.stdout]
        assert proc.wait(120) == 3
    finally:
        server.proc.kill()
        server.stop()
    first, second = [e["summary"] for e in seen if e["event"] == "level-end"]
    assert first["status"] == "failed"
    hung = first.get("server_hung") or first.get("server_stopping") or {}
    died = first.get("server_died") or {}
    # the streams in flight went silent together (or the server was already gone): never one stall each
    assert hung.get("message", "").startswith(("server hung: no bytes on any of", "server stopping: ")) or \
        died.get("message", "").startswith("connection refused from "), first
    assert first["completed"] + first["failed"] + first.get("not_sent", 0) == 8
    if hung and first["failed"] >= 4:  # one stall period for them all, not one each (3 s per request)
        assert first["duration_s"] < 3 * first["failed"], first
    assert second["status"] == "skipped"
