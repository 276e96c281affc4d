"""What a profile says about its model and GPUs, turned into roofline inputs, with what-if overrides."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import RooflineError


@dataclass(frozen=True)
class Inputs:
    """Everything the operator can change in the what-if editor."""

    config: str | None = None
    quant_config: str | None = None
    gpu: str | None = None
    count: int | None = None
    tp: int | None = None
    ep: int | None = None
    quant: str | None = None
    kv_dtype: str | None = None
    context: int = 4096
    assumptions: dict[str, Any] = field(default_factory=dict)
    profile: str | None = None   # the profile these came from, to name it in "how to set this" hints

    def with_changes(self, **changes: Any) -> "Inputs":
        return replace(self, **changes)


def inputs_from_profile(profile) -> Inputs:
    m, g = profile.model, profile.gpu
    return Inputs(config=m.config, quant_config=m.quant_config, gpu=g.name, count=g.count,
                  quant=m.quant, kv_dtype=m.kv_dtype, profile=getattr(profile, "name", None))


def how_to_set(inputs: Inputs) -> str:
    """The command that gives a profile its model and GPUs."""
    name = inputs.profile or "NAME"
    return (f"gpudeck profiles add {name} --force (--local | --ssh HOST) --model-config PATH/config.json "
            f"--gpu 'GPU NAME' --gpu-count N")


_FACTS_CACHE: dict[tuple[str, float], Any] = {}


def compute_inputs(inputs: Inputs, batches=None, checkpoint=None):
    """A Roofline for these inputs; RooflineError says which input is missing or wrong."""
    from . import compute, load_model, load_quant_file, scheme_from_name
    from .model_lookup import quant_file_beside, resolve_model
    from .result import DEFAULT_BATCHES

    if not inputs.config:
        raise RooflineError(f"no model config for this profile: set it with `{how_to_set(inputs)}`")
    if not inputs.gpu:
        raise RooflineError(f"no GPU for this profile: press w and type one, or set it with `{how_to_set(inputs)}`")
    if not inputs.count:
        raise RooflineError(f"no GPU count for this profile: press w and type one, or set it with `{how_to_set(inputs)}`")
    path = Path(inputs.config).expanduser()
    if not path.is_file():
        path = resolve_model(inputs.config)
    key = (str(path), path.stat().st_mtime)
    if key not in _FACTS_CACHE:
        _FACTS_CACHE[key] = load_model(path)
    facts = _FACTS_CACHE[key]
    if inputs.quant:
        scheme = scheme_from_name(inputs.quant)
    else:
        qpath = Path(inputs.quant_config).expanduser() if inputs.quant_config else quant_file_beside(path)
        scheme = load_quant_file(qpath) if qpath else None
    return compute(facts, inputs.gpu, inputs.count, tp=inputs.tp, ep=inputs.ep, quant=scheme,
                   kv_dtype=inputs.kv_dtype, context=inputs.context,
                   batches=batches or DEFAULT_BATCHES, assumptions=inputs.assumptions, checkpoint=checkpoint)
