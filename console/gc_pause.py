"""The cyclic garbage collector paused while a big answer is read or a logged repr is parsed.

Reading ten thousand GPUs makes about a million objects (the decoded answer,
then the GPUs and rows built from it). None of them form cycles, so the
cyclic collector has nothing to free among them, but the count of new objects
sets it off again and again, and each full pass walks everything alive: more
than half the CPU of a refresh went to it. Reference counting still frees
everything as usual while it is paused; it runs again as soon as the last
reader is done. Counted, so overlapping readers (threads) resume it once.

The launch-log reader uses it too: on Python 3.11 a collection that runs a
finaliser while an AST is being built fails the build ("recursion depth
mismatch"), which read a real sglang `server_args` line as six keys.
"""
from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_readers = 0
_was_enabled = False


@contextlib.contextmanager
def collector_paused():
    global _readers, _was_enabled
    with _lock:
        if _readers == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _readers += 1
    try:
        yield
    finally:
        with _lock:
            _readers -= 1
            if _readers == 0 and _was_enabled:
                gc.enable()
