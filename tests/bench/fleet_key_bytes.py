"""How many bytes the fleet's DCGM answer takes, and what reading them costs, keyed the short way
against the long (old) way, at 1,024 GPUs (128 hosts x 8).

The answer is gpudeck's compact query (console/gpus/fleet_query.py): one identity row per GPU
(only every 30 s), then one row per (GPU, field) naming its GPU by a key. Keyed the long way, that
key was every label that tells GPUs apart joined (exporter, host, index, device, UUID, MIG
instance: some 85 bytes); the short way it is the exporter, index and MIG instance (some 16
bytes). The answers are the stand-in Prometheus's (tests/prom_peer.py: label for label what a
real one returns for the sim exporters; a real one under load drops slow exporters' series, so
its answers changed size from one query to the next), JSON as Prometheus writes it (no spaces),
gzipped at zlib's default level.

Figures per shape (with identities, values only) and key:
  - bytes on the wire (gzip) and after gunzip;
  - the time to gunzip and decode the JSON, and to read it (`FleetReader.read`): the median of
    alternated rounds, each round timing every variant in turn (order reversed every other round);
  - each as a ratio against the peer: the plain answer (every DCGM series with every label, what
    a bare client asks), gunzipped and decoded in the same rounds.

    python tests/bench/fleet_key_bytes.py [--hosts 128] [--gpus 8] [--rounds 21]

Figures (2-core VM shared with other jobs; see the load line printed with each run):

    2026-12-07, a loaded box (load 6.5-7.0), 41 alternated rounds, 1,024 GPUs:
      answer                  gzip   gunzipped  gunzip+JSON (x peer)  read
      plain (peer)          41,335   2,752,519   141.3 ms (1.00x)
      identities, long key  54,919   1,721,639   108.4 ms (0.77x)     68.2 ms
      values, long key      37,210   1,376,263    86.5 ms (0.61x)     44.4 ms
      identities, short key 37,067   1,168,679    89.4 ms (0.63x)     62.2 ms
      values, short key     24,133     884,743    77.6 ms (0.55x)     43.2 ms
      short / long: with identities 0.67x gzip, 0.68x gunzipped, 0.83x gunzip+JSON, 0.91x read;
      values only (most refreshes) 0.65x gzip, 0.64x gunzipped, 0.90x gunzip+JSON, 0.97x read.
    The bytes drop by a third; the decode time less, since it goes with the number of rows and
    strings more than with their length.
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from _alternate import alternate, load_line  # noqa: E402  (this script's folder)


def _answers(hosts: int, gpus: int) -> dict[str, bytes]:
    """Each answer gzipped (zlib's default level, as Go's gzip writer in Prometheus): the stand-in
    Prometheus's fleet (tests/prom_peer.py), label for label what Prometheus returns for the sim
    exporters, in the shape each query asks for."""
    from tests.prom_peer import big_fleet, compact, vector

    plain = big_fleet(hosts, gpus)
    scraped = plain[-hosts:]
    shapes = {"plain (peer)": plain}
    for short, name in ((False, "long"), (True, "short")):
        shapes[f"identities, {name} key"] = compact(plain[:-hosts], short=short) + scraped
        shapes[f"values, {name} key"] = compact(plain[:-hosts], identities=False, short=short) + scraped
    return {name: gzip.compress(json.dumps(vector(rows), separators=(",", ":")).encode()) for name, rows in shapes.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=128)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()

    from console.gpus.fleet_query import FleetReader

    wire = _answers(args.hosts, args.gpus)
    at = time.time()
    decode: dict[str, list[float]] = {name: [] for name in wire}
    reading: dict[str, list[float]] = {name: [] for name in wire if name != "plain (peer)"}
    loads: list[float] = []
    counts: dict[str, set[int]] = {}       # each key's GPUs read: the same either way
    for _i, names in alternate(list(wire), args.rounds, loads):
        for name in names:
            began = time.perf_counter()
            data = json.loads(gzip.decompress(wire[name]))["data"]
            decode[name].append(time.perf_counter() - began)
            if name in reading:
                reader = FleetReader()
                if name.startswith("values"):      # a values-only answer is read after one with identities
                    reader.read(json.loads(gzip.decompress(wire["identities" + name[6:]]))["data"], at, {})
                    reader.query("")
                began = time.perf_counter()
                read = reader.read(data, at, {})
                reading[name].append(time.perf_counter() - began)
                assert read is not None and read.unreadable == 0, name
                counts.setdefault(name.split(", ")[1], set()).add(len(read.gpus))

    assert counts["short key"] == counts["long key"] and len(counts["long key"]) == 1, counts

    peer_decode = statistics.median(decode["plain (peer)"])
    print(f"{args.hosts * args.gpus:,} GPUs ({args.hosts} hosts x {args.gpus}; {min(counts['long key'])} GPUs "
          "read either way), "
          f"{args.rounds} alternated rounds")
    print(f"{'answer':<24} {'gzip':>10} {'gunzipped':>11} {'gunzip+JSON':>12} {'x peer':>7} {'read':>8}")
    for name, raw in wire.items():
        plain = len(gzip.decompress(raw))
        ms = statistics.median(decode[name]) * 1000
        read_ms = f"{statistics.median(reading[name]) * 1000:.1f} ms" if name in reading else ""
        print(f"{name:<24} {len(raw):>10,} {plain:>11,} {ms:>9.1f} ms {ms / 1000 / peer_decode:>6.2f}x {read_ms:>8}")
    for shape in ("identities", "values"):
        long, short = wire[f"{shape}, long key"], wire[f"{shape}, short key"]
        print(f"{shape}: short key / long key: gzip {len(short) / len(long):.2f}x, gunzipped "
              f"{len(gzip.decompress(short)) / len(gzip.decompress(long)):.2f}x, gunzip+JSON "
              f"{statistics.median(decode[f'{shape}, short key']) / statistics.median(decode[f'{shape}, long key']):.2f}x, "
              f"read {statistics.median(reading[f'{shape}, short key']) / statistics.median(reading[f'{shape}, long key']):.2f}x")
    print(load_line(loads))


if __name__ == "__main__":
    main()
