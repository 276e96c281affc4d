"""A TCP port for a server gpudeck starts on this machine (the demo's simulators, the tests' peers).

A port found by binding to 0 comes from the kernel's ephemeral range, and until the server binds
it, any process's outgoing connection or own listener may take it (srun's I/O listener once did,
and the server then failed with "Address already in use"). So the port is picked outside that
range, checked free on every address, and never handed out twice by one process.
"""
from __future__ import annotations

import errno
import random
import socket
import threading
from pathlib import Path

LOWEST = 10000                # below: well-known and registered ports other programs expect
HIGHEST = 65535
RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = (32768, 60999)   # Linux's default, when the range cannot be read
TRIES = 500

_given: set[int] = set()
_lock = threading.Lock()


def ephemeral_range(path: Path = RANGE_FILE) -> tuple[int, int]:
    """The kernel's range for ports it picks itself (bind to 0, outgoing connections)."""
    try:
        low, high = (int(x) for x in path.read_text()[:64].split()[:2])
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    if not 0 < low <= high <= HIGHEST:
        return DEFAULT_EPHEMERAL
    return low, high


def candidates(ephemeral: tuple[int, int]) -> list[range]:
    """The stretches a port may come from: above LOWEST and outside the ephemeral range."""
    low, high = ephemeral
    spans = [range(LOWEST, min(low, HIGHEST + 1)), range(max(high + 1, LOWEST), HIGHEST + 1)]
    return [span for span in spans if len(span)]


def is_free(port: int) -> bool:
    """Nothing is bound to `port` on any IPv4 or IPv6 address (a bind to the wildcard would clash)."""
    for family, address in ((socket.AF_INET, ("", port)), (socket.AF_INET6, ("::", port))):
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:          # no IPv6 on this machine: nothing can listen there
            continue
        with sock:
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                if family == socket.AF_INET6 and exc.errno == errno.EADDRNOTAVAIL:   # IPv6 is off
                    continue
                return False
    return True


def free_port() -> int:
    """A port nothing is bound to now, outside the ephemeral range, not handed out before here."""
    spans = candidates(ephemeral_range())
    if not spans:
        raise RuntimeError("no port outside the kernel's ephemeral range is left above 10000")
    sizes = [len(span) for span in spans]
    for _ in range(TRIES):
        span = random.choices(spans, weights=sizes)[0]
        port = random.choice(span)
        with _lock:
            if port in _given or not is_free(port):
                continue
            _given.add(port)
        return port
    raise RuntimeError(f"no free port found in {TRIES} tries outside the kernel's ephemeral range")
