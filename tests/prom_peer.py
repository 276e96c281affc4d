"""A tiny stand-in for Prometheus's HTTP API that answers what a test tells it to, or misbehaves.

A real Prometheus never sends a malformed answer, trickles, or answers with
200 MB, so for those the peer is this server (its own threads, a real socket):

- `answers[path]` is the JSON document (or raw bytes) for `path`; a query's
  answer may depend on the expression (`gpu` for the DCGM query, `server`
  for the inference servers' one);
- `trickle_s`: send the head, then one byte every `trickle_s` seconds until
  the test ends (a peer that never trips a per-read timeout);
- `chunked`: send the body with chunked framing (no Content-Length to refuse early).

`big_fleet(hosts, gpus)` is the DCGM answer of a fleet of any size, label
for label what a real Prometheus returns for the sim exporters (eight series
per GPU, then each target's `up` and last scrape time); `compact(result)` is
that answer as Prometheus gives it to gpudeck's own query (one identity row
per GPU, then one short row per value: console/gpus/fleet_query.py). An answer
may be a callable taking the query's expression and returning bytes, so a
long-running peer can keep scrape times fresh.
`python tests/prom_peer.py --hosts N --gpus G` serves such a fleet from its
own process (the benches measure gpudeck's CPU apart from the peer's) and
prints its URL.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

NOW = time.time


def series(name: str, value, instance: str = "10.0.0.1:9400", host: str = "node-a", gpu: str = "0", **labels):
    """One DCGM series as an instant query returns it."""
    metric = {"__name__": name, "instance": instance, "job": "dcgm", "gpu": gpu, "UUID": f"GPU-{host}-{gpu}",
              "Hostname": host, "modelName": "NVIDIA H100 80GB HBM3", **labels}
    return {"metric": metric, "value": [NOW(), str(value)]}


def up(instance: str = "10.0.0.1:9400", value: int = 1):
    return {"metric": {"__name__": "up", "instance": instance, "job": "dcgm"}, "value": [NOW(), str(value)]}


def scraped(instance: str = "10.0.0.1:9400"):
    return {"metric": {"instance": instance, "job": "dcgm", "gpudeck_scrape_ts": "1"}, "value": [NOW(), str(NOW())]}


def vector(results: list) -> dict:
    return {"status": "success", "data": {"resultType": "vector", "result": results}}


DCGM_FIELDS = {"DCGM_FI_DEV_FB_FREE": 80000, "DCGM_FI_DEV_FB_USED": 15000, "DCGM_FI_DEV_GPU_TEMP": 45,
               "DCGM_FI_DEV_GPU_UTIL": 60, "DCGM_FI_DEV_MEM_COPY_UTIL": 30, "DCGM_FI_DEV_POWER_USAGE": 350.5,
               "DCGM_FI_DEV_SM_CLOCK": 1980, "DCGM_FI_DEV_XID_ERRORS": 0}


def fleet_host(i: int) -> str:
    return f"node-{i:05d}"


def fleet_instance(i: int) -> str:
    return f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}:9400"


def big_fleet(hosts: int, gpus: int, *, at: float | None = None, down: set[int] = frozenset(),
              late: dict[int, float] | None = None, values: dict[tuple[int, int], dict] | None = None) -> list:
    """The DCGM query's result for `hosts` x `gpus`; `down` hosts' exporters are down (no series),
    `late` hosts were last scraped that many seconds before `at`, `values[(host, gpu)]` overrides
    series values ({"DCGM_FI_DEV_GPU_UTIL": 100, ...}). Utilisation is (7 * host + 13 * gpu) % 101."""
    at = NOW() if at is None else at
    late, values = late or {}, values or {}
    out = []
    for h in range(hosts):
        instance = fleet_instance(h)
        if h not in down:
            for g in range(gpus):
                labels = {"DCGM_FI_DRIVER_VERSION": "580.95.05", "Hostname": fleet_host(h),
                          "UUID": f"GPU-{h:08x}-{g:04x}-4000-8000-000000000000", "device": f"nvidia{g}",
                          "gpu": str(g), "instance": instance, "job": "dcgm",
                          "modelName": "NVIDIA H100 80GB HBM3", "pci_bus_id": f"00000000:{0x18 + g:02X}:00.0"}
                mine = {**DCGM_FIELDS, "DCGM_FI_DEV_GPU_UTIL": (h * 7 + g * 13) % 101, **values.get((h, g), {})}
                for name, value in mine.items():
                    out.append({"metric": {**labels, "__name__": name}, "value": [at, str(value)]})
    for h in range(hosts):
        out.append({"metric": {"__name__": "up", "instance": fleet_instance(h), "job": "dcgm"},
                    "value": [at, "0" if h in down else "1"]})
    for h in range(hosts):
        out.append({"metric": {"instance": fleet_instance(h), "job": "dcgm", "gpudeck_scrape_ts": "1"},
                    "value": [at, str(at - late.get(h, 0.5))]})
    return out


def compact(result: list, identities: bool = True, short: bool = True) -> list:
    """What Prometheus answers to gpudeck's DCGM query (console/gpus/fleet_query.py) over the series
    of `result`, a plain answer: its PromQL done by hand (label_join, count by, max by); without
    the identity rows when the query did not ask for them; each GPU keyed the long way (the old
    query's, every label of `KEY_LABELS`) when `short` is False."""
    from console.gpus.dcgm import ID_LABELS, SERIES_NAMES
    from console.gpus.fleet_query import FIELD, KEY, KEY_LABELS, PREFIX, SEP, SHORT_KEY_LABELS

    identity_rows: dict[tuple, dict] = {}
    values: dict[tuple, dict] = {}
    rest = []
    for row in result:
        labels, (at, text) = row["metric"], row["value"]
        name = labels.get("__name__")
        if name not in SERIES_NAMES:
            rest.append(row)
            continue
        key = SEP.join(labels.get(label, "") for label in (SHORT_KEY_LABELS if short else KEY_LABELS))
        identity = {KEY: key, **{label: labels[label] for label in ID_LABELS if labels.get(label)}}
        counted = identity_rows.setdefault(tuple(sorted(identity.items())), {"metric": identity, "value": [at, "0"]})
        counted["value"][1] = str(int(counted["value"][1]) + 1)
        field = name[len(PREFIX):]
        kept = values.setdefault((key, field), {"metric": {KEY: key, FIELD: field}, "value": [at, text]})
        if float(text) > float(kept["value"][1]):
            kept["value"][1] = text
    return [*(identity_rows.values() if identities else ()), *values.values(), *rest]


def fresh_answer(hosts: int, gpus: int):
    """A callable answer for `big_fleet`: the series encoded once in each shape (plain, and compact
    when the query is gpudeck's, its identity rows only when asked), the scrape times new on every
    request."""
    plain = big_fleet(hosts, gpus, at=0.0)[:-hosts]
    shapes = {"plain": json.dumps(plain).encode()[:-1]}
    for short in (True, False):
        shapes["whole", short] = json.dumps(compact(plain, short=short)).encode()[:-1]
        shapes["values", short] = json.dumps(compact(plain, identities=False, short=short)).encode()[:-1]

    def answer(expr: str) -> bytes:
        from console.gpus.fleet_query import KEY

        short = '"UUID"' not in expr      # the long key joins the UUID, the short one does not
        series = shapes["plain"] if KEY not in expr else shapes["whole" if "count by" in expr else "values", short]
        at = NOW()
        scraped = [{"metric": {"instance": fleet_instance(h), "job": "dcgm", "gpudeck_scrape_ts": "1"},
                    "value": [at, str(at - 0.5)]} for h in range(hosts)]
        return (b'{"status": "success", "data": {"resultType": "vector", "result": ' + series + b", "
                + json.dumps(scraped).encode()[1:] + b"}}")
    return answer


def healthy_fleet() -> list:
    """One host, one GPU, every value sane."""
    return [series("DCGM_FI_DEV_GPU_UTIL", 55), series("DCGM_FI_DEV_FB_USED", 1000),
            series("DCGM_FI_DEV_FB_FREE", 80000), series("DCGM_FI_DEV_GPU_TEMP", 40), up(), scraped()]


class PromPeer:
    def __init__(self) -> None:
        self.answers: dict[str, object] = {
            "gpu": vector(healthy_fleet()),
            "server": vector([]),
            "/api/v1/targets": {"status": "success", "data": {"activeTargets": []}},
            "/api/v1/query_range": {"status": "success", "data": {"resultType": "matrix", "result": []}},
            "/api/v1/status/buildinfo": {"status": "success", "data": {"version": "2.45.0"}},
        }
        self.trickle_s: float | None = None
        self.chunked = False
        self.asked = threading.Event()
        self.stopping = threading.Event()
        peer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                peer.asked.set()
                parts = urlsplit(self.path)
                key = parts.path
                expr = parse_qs(parts.query).get("query", [""])[0]
                if key == "/api/v1/query":
                    key = "gpu" if "gpudeck_scrape_ts" in expr else "server"   # the DCGM query asks for scrape times
                answer = peer.answers.get(key, {"status": "error", "error": "not here"})
                answer = answer(expr) if callable(answer) else answer
                body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                try:
                    if peer.trickle_s is not None:
                        self._trickle()
                    elif peer.chunked:
                        self._chunked(body)
                    else:
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                except OSError:   # the client gave up: that is what the tests want
                    self.close_connection = True

            def _trickle(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                self.wfile.flush()
                for byte in (b'{"status": "success", "data": ' + b" " * 999_000):
                    if peer.stopping.wait(peer.trickle_s):
                        break
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                self.close_connection = True

            def _chunked(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                step = 1 << 16
                for at in range(0, len(body), step):
                    piece = body[at:at + step]
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address) -> None:
                pass    # a client that hung up mid-answer: what several tests do on purpose

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def main() -> None:
    """Serve a fleet of `--hosts` x `--gpus` until killed; the first line printed is the URL."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--gpus", type=int, default=8)
    args = ap.parse_args()
    peer = PromPeer()
    peer.answers["gpu"] = fresh_answer(args.hosts, args.gpus)
    print(peer.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        peer.close()


if __name__ == "__main__":
    main()
