"""A large JSONL dataset of tiny prompts: the bench's peak memory and its time to the first request.

    .venv/bin/python tests/bench/dataset_load.py [--mb 150] [--runs 3] [--base REV]

Writes a JSONL file of `--mb` MB of one-line prompts (`{"prompt": "hi 123"}`,
about 6 million lines at 150 MB), starts a small server that answers every
completion at once, and runs `gpudeck bench --dataset FILE --concurrency 1
--num-prompts 8 --warmup 0` against it in a fresh process. Prints, per run,
the time from the process's start to the first completion the server got, and
the process's peak RSS (wait4). `--base REV` runs the same on that commit's
tree (a `git archive` into a temporary folder), alternated with this one.

Figures (2-core VM shared with other jobs, load 2.4-3.8; 150 MB, 6.04 M lines;
2026-12-04, median of 3 alternated runs):

    before (b78fc27): first request 25.6 s, peak RSS 1,330 MB
    after:            first request  2.7 s, peak RSS    37 MB

Before, the setup's check held every line as an object, and the sweep then
read the file whole again; now one pass checks the file and notes where every
16,384th prompt starts, and a level reads back only its own prompts.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _alternate import alternate, load_line  # noqa: E402  (this script's folder)

MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
ANSWER = (b'data: {"choices":[{"index":0,"text":" a"}]}\n\n'
          b'data: {"choices":[{"index":0,"text":" b"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
          b"data: [DONE]\n\n")


class Server:
    """Answers /v1/models and every completion at once; notes when the first completion came."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        self.ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main():
            server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]
            self.ready.set()
            await server.serve_forever()

        self.loop.run_until_complete(main())

    async def _handle(self, reader, writer) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                path = head.split(" ", 2)[1]
                length = next((int(line.split(":")[1]) for line in head.split("\r\n")
                               if line.lower().startswith("content-length:")), 0)
                if length:
                    await reader.readexactly(length)
                if path == "/v1/models":
                    body, kind = MODELS, b"application/json"
                elif path.startswith("/v1/"):
                    if self.first is None:
                        self.first = time.monotonic()
                    body, kind = ANSWER, b"text/event-stream"
                else:
                    body, kind = b"", b"text/plain"
                status = b"200 OK" if body else b"404 Not Found"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: " + kind + b"\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


def write_dataset(path: Path, mb: int) -> int:
    lines = 0
    with open(path, "w") as fh:
        size = 0
        while size < mb * 1_000_000:
            line = json.dumps({"prompt": f"hi {lines}"}) + "\n"
            fh.write(line)
            size += len(line)
            lines += 1
    return lines


def one_run(tree: Path, dataset: Path, home: str) -> tuple[float, float]:
    """(seconds from the process's start to the first completion, peak RSS in MB)."""
    server = Server()
    env = dict(os.environ, GPUDECK_HOME=home)
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "console.bench", "--url", f"http://127.0.0.1:{server.port}",
                             "--dataset", str(dataset), "--dataset-format", "jsonl", "--concurrency", "1",
                             "--num-prompts", "8", "--warmup", "0", "--json"],
                            cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 3) or server.first is None:
        raise SystemExit(f"{tree}: the bench ended {proc.returncode}: {proc.stderr.read().decode()[-400:]}")
    return server.first - start, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=150)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--base", help="a commit to measure beside this tree")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dataset = Path(tmp) / "tiny.jsonl"
        print(f"{write_dataset(dataset, args.mb):,} lines, {dataset.stat().st_size / 1e6:.0f} MB")
        trees = {"this tree": ROOT}
        if args.base:
            base = Path(tmp) / "base"
            base.mkdir()
            archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
            trees = {args.base: base, **trees}
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        loads: list[float] = []
        for _, names in alternate(list(trees), args.runs, loads):
            for name in names:
                results[name].append(one_run(trees[name], dataset, tmp))
        for name, runs in results.items():
            first = statistics.median(t for t, _ in runs)
            rss = statistics.median(r for _, r in runs)
            print(f"{name:>12}: first request {first:5.1f} s, peak RSS {rss:7,.0f} MB  "
                  f"(runs: {', '.join(f'{t:.1f} s/{r:,.0f} MB' for t, r in runs)})")
        print(load_line(loads))


if __name__ == "__main__":
    main()
