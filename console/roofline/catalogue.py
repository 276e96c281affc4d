"""The GPU catalogue: the packaged `gpus.toml` plus the user's own `gpus.toml`, matched by name."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import RooflineError

_PACKAGED = Path(__file__).with_name("gpus.toml")
_NEEDED = ("key", "name", "memory_gb", "bandwidth_gbs", "tflops", "interconnect",
           "allreduce_alpha_us", "allreduce_beta_gbs")


@dataclass(frozen=True)
class GPUSpec:
    key: str
    name: str
    memory_gb: float
    bandwidth_gbs: float
    tflops: dict[str, float]
    interconnect: str
    allreduce_alpha_us: float
    allreduce_beta_gbs: float
    link_gbs: float | None = None
    aliases: tuple[str, ...] = ()
    source: str = "packaged"
    figures_from: dict[str, str] = field(default_factory=dict)   # figure -> the document it comes from
    # what the chip reaches as measured (a plain read, a bf16 GEMM), beside the datasheet; None: not measured
    achievable_bandwidth_gbs: float | None = None
    achievable_tflops: dict[str, float] = field(default_factory=dict)

    def realistic_bandwidth_gbs(self) -> tuple[float, str]:
        """(the bandwidth the realistic bound uses, where it comes from): measured when kept, else the datasheet."""
        if self.achievable_bandwidth_gbs:
            return self.achievable_bandwidth_gbs, self.figures_from.get("achievable", "measured")
        return self.bandwidth_gbs, "datasheet (no measurement kept for this chip: gpudeck roofline --probe)"

    def realistic_tflops(self, dtype: str) -> float:
        """Dense TFLOPS the realistic bound uses: the measured GEMM rate of that dtype, else the datasheet's
        scaled by the measured bf16 fraction (a chip that reaches 66% in bf16 is not assumed at 100% in fp8)."""
        peak, got = self.peak_tflops(dtype)
        if got in self.achievable_tflops:
            return float(self.achievable_tflops[got])
        if "bf16" in self.achievable_tflops and self.tflops.get("bf16"):
            return peak * float(self.achievable_tflops["bf16"]) / float(self.tflops["bf16"])
        return peak

    def peak_tflops(self, dtype: str) -> tuple[float, str]:
        """Dense TFLOPS for a dtype, falling back to the next wider one the GPU has."""
        for candidate in {"fp4": ("fp4", "fp8", "bf16"), "fp8": ("fp8", "bf16")}.get(dtype, (dtype, "bf16")):
            if candidate in self.tflops:
                return float(self.tflops[candidate]), candidate
        raise RooflineError(f"GPU {self.name}: catalogue entry has no 'tflops.bf16'")

    @property
    def has_nvlink(self) -> bool:
        return "nvlink" in self.interconnect.lower() and "no nvlink" not in self.interconnect.lower()

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "memory_gb": self.memory_gb,
                "bandwidth_gbs": self.bandwidth_gbs, "tflops": dict(self.tflops),
                "interconnect": self.interconnect, "link_gbs": self.link_gbs,
                "allreduce_alpha_us": self.allreduce_alpha_us,
                "allreduce_beta_gbs": self.allreduce_beta_gbs, "source": self.source,
                "achievable_bandwidth_gbs": self.achievable_bandwidth_gbs,
                "achievable_tflops": dict(self.achievable_tflops) or None,
                "figures_from": dict(self.figures_from)}


def user_catalogue_path() -> Path:
    from profiles.paths import config_dir

    return config_dir() / "gpus.toml"


def load_catalogue() -> list[GPUSpec]:
    """Packaged entries, then the user's: a user entry with the same key replaces the packaged one."""
    entries = {g.key: g for g in _read(_PACKAGED, "packaged")}
    user = user_catalogue_path()
    if user.is_file():
        for g in _read(user, str(user)):
            entries[g.key] = g
    return list(entries.values())


MAX_CATALOGUE_BYTES = 1 << 20   # the packaged one, every GPU gpudeck knows, is some 20 KB


def _read(path: Path, source: str) -> list[GPUSpec]:
    from ..store.files import FileRefused, read_capped

    try:   # the user's file may be anything: a FIFO or a huge file is refused, not waited on or read whole
        doc = tomllib.loads(read_capped(path, MAX_CATALOGUE_BYTES).decode("utf-8"))
    except FileRefused as exc:
        raise RooflineError(f"GPU catalogue {exc}") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RooflineError(f"GPU catalogue {path}: {exc}") from None
    out = []
    for i, raw in enumerate(doc.get("gpu", [])):
        where = f"{path} [[gpu]] #{i + 1}"
        for key in _NEEDED:
            if key not in raw:
                raise RooflineError(f"{where}: missing field '{key}'")
        if not isinstance(raw["tflops"], dict) or "bf16" not in raw["tflops"]:
            raise RooflineError(f"{where}: missing field 'tflops.bf16'")
        out.append(GPUSpec(
            key=str(raw["key"]), name=str(raw["name"]), memory_gb=float(raw["memory_gb"]),
            bandwidth_gbs=float(raw["bandwidth_gbs"]),
            tflops={k: float(v) for k, v in raw["tflops"].items()},
            interconnect=str(raw["interconnect"]),
            allreduce_alpha_us=float(raw["allreduce_alpha_us"]),
            allreduce_beta_gbs=float(raw["allreduce_beta_gbs"]),
            link_gbs=float(raw["link_gbs"]) if raw.get("link_gbs") is not None else None,
            aliases=tuple(_words(a) for a in [raw["name"], raw["key"], *raw.get("aliases", [])]),
            source=source,
            figures_from={str(k): str(v) for k, v in (raw.get("figures_from") or {}).items()},
            **_achievable(raw.get("achievable"), where),
        ))
    return out


def _achievable(raw: Any, where: str) -> dict[str, Any]:
    """The `achievable = { bandwidth_gbs = .., tflops = { bf16 = .. } }` table of an entry, checked."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RooflineError(f"{where}: 'achievable' must be a table")
    bw = raw.get("bandwidth_gbs")
    tflops = raw.get("tflops") or {}
    numbers = [bw] if bw is not None else []
    numbers += list(tflops.values()) if isinstance(tflops, dict) else [tflops]
    if not isinstance(tflops, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                                               for v in numbers):
        raise RooflineError(f"{where}: 'achievable' figures must be positive numbers")
    return {"achievable_bandwidth_gbs": float(bw) if bw is not None else None,
            "achievable_tflops": {str(k): float(v) for k, v in tflops.items()}}


_NOISE = {"nvidia", "amd", "corporation"}


def _words(name: str) -> str:
    """Lower case, punctuation to spaces, vendor words dropped: 'NVIDIA A100-SXM4-80GB' -> 'a100 sxm4 80gb'."""
    words = re.sub(r"[^a-z0-9]+", " ", name.lower()).split()
    return " ".join(w for w in words if w not in _NOISE)


def find_gpu(name: str, catalogue: list[GPUSpec] | None = None) -> GPUSpec:
    """Match a catalogue key, a marketing name or an nvidia-smi name."""
    catalogue = catalogue if catalogue is not None else load_catalogue()
    wanted = _words(name)
    if not wanted:
        raise RooflineError("empty GPU name")
    for gpu in catalogue:
        if wanted in gpu.aliases:
            return gpu
    wanted_words = wanted.split()
    best: tuple[int, GPUSpec] | None = None
    for gpu in catalogue:
        if _conflicts(wanted_words, gpu):
            continue
        for alias in gpu.aliases:
            alias_words = alias.split()
            if alias_words and _contains_in_order(wanted_words, alias_words):
                score = len(alias_words)
                if best is None or score > best[0]:
                    best = (score, gpu)
    if best is None:
        known = ", ".join(g.name for g in catalogue)
        raise RooflineError(f"unknown GPU {name!r}: not in the catalogue ({known}); add it to {user_catalogue_path()}")
    return best[1]


_FORMS = {"pcie": "pcie", "sxm": "sxm", "sxm4": "sxm", "sxm5": "sxm", "sxm6": "sxm", "nvl": "nvl"}


def _form(words: list[str]) -> str | None:
    return next((_FORMS[w] for w in words if w in _FORMS), None)


def _conflicts(wanted: list[str], gpu: GPUSpec) -> bool:
    """A name that says its form factor or memory size never matches an entry of another one."""
    said = _form(wanted)
    if said is not None:
        forms = {_form(a.split()) for a in gpu.aliases} - {None}
        if forms and said not in forms:
            return True
    for w in wanted:
        m = re.fullmatch(r"(\d+)g(?:b)?", w)
        if m and not 0.85 <= gpu.memory_gb / int(m.group(1)) <= 1.15:
            return True
    return False


def _contains_in_order(words: list[str], needle: list[str]) -> bool:
    it = iter(words)
    return all(any(w == n for w in it) for n in needle)
