"""asyncssh, imported with a quicker answer to the one slow question its import asks.

On import asyncssh asks ctypes where liboqs (post-quantum key exchange) is:
`ctypes.util.find_library("oqs")`, then `("liboqs")`. On Linux, for a library
not in the loader's cache, each call runs `ldconfig -p`, then the C compiler,
then the linker: six programs before every SSH command, 20 ms on a quiet
machine and 60-170 ms on a busy one, wherever a compiler is installed.

A library can only be loaded from where the dynamic loader looks: its cache,
LD_LIBRARY_PATH, the system library directories. So those are looked at first
(one `ldconfig -p` and a few directory listings). Where a file of that name is,
ctypes' own search runs unchanged and its answer is used; where none is, the
answer is None, which is ctypes' answer too unless the compiler knows a
directory the loader does not read (then ctypes names a library that cannot be
loaded, and asyncssh's import fails). Every key exchange asyncssh can use stays
available; nothing else about the connection changes.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import subprocess
import sys
import sysconfig
import threading

ASKED = ("oqs", "liboqs")          # the names asyncssh.crypto.pq looks for
LDCONFIG = "/sbin/ldconfig"        # where ctypes runs it from
_lock = threading.Lock()


def import_asyncssh():
    """The asyncssh module (imported once, with the quick search for liboqs on Linux)."""
    module = sys.modules.get("asyncssh")
    if module is not None:
        return module
    import ctypes.util

    with _lock:
        if not sys.platform.startswith("linux") or not os.access(LDCONFIG, os.X_OK):
            import asyncssh
            return asyncssh
        real = ctypes.util.find_library
        ctypes.util.find_library = lambda name: quick_find_library(name, real) if name in ASKED else real(name)
        try:
            import asyncssh
        finally:
            ctypes.util.find_library = real
        return asyncssh


def quick_find_library(name: str, real=None) -> str | None:
    """`ctypes.util.find_library(name)` where the loader could find such a library, else None."""
    if real is None:
        import ctypes.util

        real = ctypes.util.find_library
    return real(name) if loader_may_have(name) else None


def loader_may_have(name: str) -> bool:
    """Whether a `lib<name>.so*` is in the loader's cache, in LD_LIBRARY_PATH or in a system
    library directory (True as well when the cache cannot be read: then ctypes decides)."""
    listing = _loader_cache()
    if not listing:
        return True
    if re.search(rb"\slib" + re.escape(os.fsencode(name)) + rb"\.so", listing):
        return True
    pattern = "lib" + glob.escape(name) + ".so*"
    return any(glob.glob(os.path.join(glob.escape(d), pattern)) for d in _library_dirs())


@functools.lru_cache(maxsize=1)
def _loader_cache() -> bytes:
    """`ldconfig -p`, read once for both names (empty when it cannot be read)."""
    try:
        return subprocess.run([LDCONFIG, "-p"], capture_output=True, timeout=10, check=False,
                              env={"LC_ALL": "C", "LANG": "C"}).stdout
    except (OSError, subprocess.SubprocessError):
        return b""


def _library_dirs() -> list[str]:
    triplet = sysconfig.get_config_var("MULTIARCH") or f"{os.uname().machine}-linux-gnu"
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for base in ("/lib", "/usr/lib", "/usr/local/lib"):
        dirs += [base, f"{base}/{triplet}", f"{base}64"]
    return dirs
