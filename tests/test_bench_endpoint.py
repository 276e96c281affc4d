"""The Bench tab's model list: asked over the bench's own HTTP/1.1 client, hostile answers give []."""
from __future__ import annotations

import asyncio
import json

import pytest

from console.bench.endpoint import MAX_MODELS_BYTES, list_models


async def serve(answer: bytes | None):
    """A server that answers every request with `answer` and closes (None: says nothing, ever)."""
    requests: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests.append(await reader.readuntil(b"\r\n\r\n"))
        if answer is None:
            await asyncio.Event().wait()
        writer.write(answer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}", requests


def _models(*ids: str) -> bytes:
    return json.dumps({"object": "list", "data": [{"id": i, "object": "model"} for i in ids]}).encode()


async def test_models_from_a_content_length_answer_and_the_request_is_a_get():
    body = _models("SmolLM2-135M", "other")
    server, url, requests = await serve(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                        b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    async with server:
        assert await list_models(url + "/prefix") == ["SmolLM2-135M", "other"]
    assert requests[0].startswith(b"GET /prefix/v1/models HTTP/1.1\r\n")


async def test_models_from_a_chunked_answer():
    body = _models("a")
    wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    wire += b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:7], body[7:])) + b"0\r\n\r\n"
    server, url, _ = await serve(wire)
    async with server:
        assert await list_models(url) == ["a"]


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found",
    b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nnot json",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]",
    b'HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{"data": "x"}',
    b'HTTP/1.1 200 OK\r\nContent-Length: 24\r\n\r\n{"data": [{"id": 5}, 3]}',
    b"\x00\xff garbage, not HTTP\r\n\r\n",
    b"",
    b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * (MAX_MODELS_BYTES + 10),
])
async def test_a_hostile_or_broken_answer_gives_no_models(answer):
    server, url, _ = await serve(answer)
    async with server:
        assert await list_models(url) == []


async def test_a_server_that_never_answers_gives_no_models_after_the_timeout():
    server, url, _ = await serve(None)
    async with server:
        assert await list_models(url, timeout=0.3) == []


async def test_nothing_listening_or_a_bad_url_gives_no_models():
    server, url, _ = await serve(b"")
    server.close()
    await server.wait_closed()
    assert await list_models(url) == []
    assert await list_models("not a url") == []


async def test_models_from_a_real_llama_server(llama_server):
    models = await list_models(llama_server.url)
    assert len(models) == 1 and models[0]
