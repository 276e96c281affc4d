"""Which checkpoint to read for a profile: the model path its launch scripts name, on its host.

The operator's model is on the host and the launch script says where. When
that path is readable (locally or over SSH) its shard headers make the
checkpoint the witness; when it is not, the roofline says "from config.json
only" and why, never a silent fallback.
"""
from __future__ import annotations

import re

from .errors import RooflineError
from .gguf_header import is_gguf
from .gguf_model import headers_from_gguf
from .gguf_remote import read_remote_gguf
from .remote_headers import read_remote
from .shard_headers import CheckpointHeaders


async def launch_model_paths(session) -> list[str]:
    """Absolute model directories (or .gguf files) the profile's launch scripts name (a Hugging Face id is no path)."""
    from ..servers import configs as cfgs

    paths: list[str] = []
    for config in await cfgs.discover(session):
        model = config.flags.get("model") if config.error is None else None
        if isinstance(model, str) and model.startswith("/") and model not in paths:
            paths.append(model.rstrip("/") or "/")
    return paths


_DTYPE_FLAG = re.compile(r"(?:^|\s)--dtype(?:=|\s+)([A-Za-z0-9_]+)")


async def launch_serving(session) -> tuple[str | None, str | None, str]:
    """(--dtype, --quantization, the script's name) of the first launch script naming a model: what the
    server will load the weights as. (None, None, "") when no script says."""
    from ..servers import configs as cfgs

    for config in await cfgs.discover(session):
        if config.error is not None or not config.flags.get("model"):
            continue
        dtype = _DTYPE_FLAG.search(config.text or "")
        quant = config.flags.get("quantization")
        return (dtype.group(1) if dtype else None), (str(quant) if quant else None), config.name
    return None, None, ""


async def checkpoint_for_profile(session, path: str | None = None) -> tuple[CheckpointHeaders | None, str]:
    """(headers, "") or (None, why not); `path` overrides the launch scripts' model path."""
    try:
        paths = [path] if path else await launch_model_paths(session)
    except Exception as exc:  # the host is down or the scripts unreadable: said, not raised
        return None, f"launch scripts not read ({exc})"
    if not paths:
        return None, "no launch script of the profile names a model directory"
    if is_gguf(paths[0]):   # llama.cpp's model is one file: its header, not a directory of shards
        try:
            return headers_from_gguf(await read_remote_gguf(session.host, paths[0])), ""
        except RooflineError as exc:
            return None, str(exc)
        except Exception as exc:  # a host that cannot run the read: said, not raised
            return None, f"{paths[0]}: GGUF header read failed ({exc})"
    try:
        headers = await read_remote(session.host, paths[0])
    except RooflineError as exc:
        return None, str(exc)
    except Exception as exc:  # a host that cannot run the listing: said, not raised
        return None, f"{paths[0]}: header listing failed ({exc})"
    if headers is None:
        return None, f"{paths[0]} holds no safetensors checkpoint"
    return headers, ""
