"""A server shutting down under open streams may send some of them its own error and cut the
rest (vLLM 0.32 after a SIGTERM, seen in the real-vLLM bench test). It was answering as they
ended, so the level is a shutdown (`server stopping`), never a death; a server whose every
stream was cut, with no word of its own, still reads as dead."""
from __future__ import annotations

import pytest

from console.bench.metrics import RequestRecord
from console.bench.runner import ended_in_order


def _failed(*errors: str) -> list[RequestRecord]:
    return [RequestRecord(index=i, ok=False, error=e, failed_at=1.0) for i, e in enumerate(errors)]


@pytest.mark.parametrize("errors, orderly", [
    (("server error: EngineCore encountered an issue", "connection reset"), True),
    (("server error: EngineDeadError", "stream cut off mid-response", "connection refused"), True),
    (("server error: EngineDeadError", "server error: EngineDeadError"), True),
    (("connection reset", "connection reset"), False),           # killed outright: no word of its own
    (("stream cut off mid-response",), False),
    (("server error: overloaded", "HTTP 400: bad request"), False),  # a failure that is neither
    ((), False),
])
def test_a_shutdown_is_the_servers_own_error_beside_cut_streams(errors, orderly):
    assert ended_in_order(_failed(*errors)) is orderly
