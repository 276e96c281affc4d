"""A tiny multi-rank "server" for the Slurm tests: the ranks rendezvous over real TCP the way
sglang's `--dist-init-addr HOST:PORT` does, then rank 0 serves HTTP `/health`.

Run one per rank under `srun` (rank from SLURM_PROCID, world size from SLURM_NTASKS):

  rank 0  listens on the init port, waits for every other rank to say hello, answers
          each, then serves `/health` on --port; it exits 1 if a peer's connection drops.
  rank N  connects to HOST:PORT (retrying while rank 0 starts), says hello, waits for
          the answer, then stays connected.

`--crash-rank R --crash-file F`: rank R dies by SIGSEGV once F exists (a test creates
it), so a crash on a chosen rank is an event the test causes, not a timer.
`--late-rank R --late-file F`: rank R joins at once but says it is ready only once F
exists, so rank 0 serves while another rank is still loading.
"""
from __future__ import annotations

import argparse
import http.server
import os
import signal
import socket
import sys
import threading
import time


def say(rank: int, text: str) -> None:
    print(f"[rank {rank} on {socket.gethostname()}] {text}", flush=True)


def serve_health(rank: int, port: int) -> None:
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the stdlib's name)
            body = b'{"status":"ok"}' if self.path == "/health" else b"{}"
            self.send_response(200 if self.path == "/health" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("0.0.0.0", port), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    say(rank, f"HTTP server listening on http://0.0.0.0:{port}")


def watch_peer(rank: int, conn: socket.socket, peer: int) -> None:
    """A dropped rendezvous connection means that rank is gone: the job cannot go on."""
    while True:
        data = conn.recv(64)
        if not data:
            say(rank, f"lost the connection to rank {peer}; exiting")
            os._exit(1)


def crash_when(rank: int, path: str) -> None:
    while not os.path.exists(path):
        time.sleep(0.05)
    say(rank, "crash file seen: dying by SIGSEGV")
    os.kill(os.getpid(), signal.SIGSEGV)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--dist-init-addr", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--crash-rank", type=int)
    p.add_argument("--crash-file")
    p.add_argument("--late-rank", type=int)
    p.add_argument("--late-file")
    args = p.parse_args()
    rank = int(os.environ.get("SLURM_PROCID", "0"))
    world = int(os.environ.get("SLURM_NTASKS", "1"))
    host, _, port = args.dist_init_addr.rpartition(":")
    signal.signal(signal.SIGTERM, lambda *a: (say(rank, "SIGTERM: shutting down"), os._exit(0)))
    say(rank, f"starting, world size {world}, init address {args.dist_init_addr}")
    if args.crash_rank == rank and args.crash_file:
        threading.Thread(target=crash_when, args=(rank, args.crash_file), daemon=True).start()
    if rank == 0:
        listener = socket.create_server(("0.0.0.0", int(port)))
        peers = {}
        while len(peers) < world - 1:
            conn, addr = listener.accept()
            hello = conn.recv(64).decode().split()
            peer = int(hello[1])
            peers[peer] = conn
            conn.sendall(b"welcome\n")
            say(rank, f"rank {peer} joined from {addr[0]}")
            threading.Thread(target=watch_peer, args=(rank, conn, peer), daemon=True).start()
        serve_health(rank, args.port)
        say(rank, "all ranks joined: ready to serve")
    else:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = socket.create_connection((host, int(port)), timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    say(rank, f"could not reach rank 0 at {args.dist_init_addr}")
                    return 1
                time.sleep(0.1)
        conn.sendall(f"hello {rank}\n".encode())
        conn.settimeout(None)
        if not conn.recv(64).startswith(b"welcome"):
            say(rank, "rank 0 did not answer the hello")
            return 1
        say(rank, f"joined rank 0 at {args.dist_init_addr}")
        if args.late_rank == rank and args.late_file:
            say(rank, "loading model shards")
            while not os.path.exists(args.late_file):
                time.sleep(0.05)
        say(rank, "ready to serve")
        threading.Thread(target=watch_peer, args=(rank, conn, 0), daemon=True).start()
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
