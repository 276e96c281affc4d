"""Find a model's config.json from a name: a path, the user's models dir, or the Hugging Face cache."""
from __future__ import annotations

import os
from pathlib import Path

from .errors import RooflineError


def models_dir() -> Path:
    from profiles.paths import config_dir

    return config_dir() / "models"


def _hf_hub() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def resolve_model(name: str) -> Path:
    """The config.json a `--model NAME` means; RooflineError says where it looked."""
    direct = Path(name).expanduser()
    candidates = [direct, direct / "config.json"]
    short = name.rstrip("/").split("/")[-1]
    candidates += [models_dir() / f"{short}.json", models_dir() / short / "config.json"]
    for path in candidates:
        if path.is_file():
            return path
    if "/" in name:
        snapshots = _hf_hub() / ("models--" + name.replace("/", "--")) / "snapshots"
        found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime, reverse=True) if snapshots.is_dir() else []
        if found:
            return found[0]
    raise RooflineError(f"model {name!r} not found: not a file, not in {models_dir()}, not in the Hugging Face cache; "
                        f"pass --model-config FILE")


def quant_file_beside(config: Path) -> Path | None:
    """A modelopt `hf_quant_config.json` next to the config (or `<name>.hf_quant_config.json` beside
    `<name>.json` or `<name>.config.json`)."""
    stem = config.stem.removesuffix(".config")
    candidates = [config.parent / "hf_quant_config.json", config.with_name(f"{config.stem}.hf_quant_config.json"),
                  config.with_name(f"{stem}.hf_quant_config.json")]
    for path in candidates:
        if path.is_file():
            return path
    return None
