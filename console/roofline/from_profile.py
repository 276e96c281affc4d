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
    assume_ignored: tuple[str, ...] = ()   # config keys the operator accepts as irrelevant (`--assume-ignored`)
    witnessed: bool = False   # the checkpoint's headers are in hand: its tensors settle the weight shapes
    serve_dtype: str | None = None   # the launch's --dtype (None: auto): the dtype the weights are read in

    def with_changes(self, **changes: Any) -> "Inputs":
        return replace(self, **changes)


def inputs_from_profile(profile) -> Inputs:
    m, g = profile.model, profile.gpu
    return Inputs(config=m.config, quant_config=m.quant_config, gpu=g.name, count=g.count,
                  quant=m.quant, kv_dtype=m.kv_dtype, profile=getattr(profile, "name", None))


def how_to_set(inputs: Inputs) -> str:
    """The command that gives a profile its model and GPUs and changes nothing else in it
    (`profiles add --force` would rebuild the profile from its flags, dropping its [server] section)."""
    name = inputs.profile or "NAME"
    return f"gpudeck profiles set {name} model.config=PATH/config.json gpu.name='GPU NAME' gpu.count=N"


_FACTS_CACHE: dict[tuple[str, float, tuple[str, ...], bool, str | None], Any] = {}


def model_facts(inputs: Inputs):
    """The model's facts from its config (a path, or a name `resolve_model` finds), read once per file
    version; each caller gets its own copy of the warnings, which it may add to."""
    from dataclasses import replace as copy_with

    from . import load_model
    from .model_lookup import resolve_model

    if not inputs.config:
        raise RooflineError(f"no model config for this profile: set it with `{how_to_set(inputs)}`")
    path = Path(inputs.config).expanduser()
    if not path.is_file():
        path = resolve_model(inputs.config)
    key = (str(path), path.stat().st_mtime, tuple(inputs.assume_ignored), inputs.witnessed, inputs.serve_dtype)
    if key not in _FACTS_CACHE:
        _FACTS_CACHE[key] = load_model(path, assume_ignored=tuple(inputs.assume_ignored), witnessed=inputs.witnessed,
                                       serve_dtype=inputs.serve_dtype)
    facts = _FACTS_CACHE[key]
    return copy_with(facts, warnings=list(facts.warnings))


def compute_inputs(inputs: Inputs, batches=None, checkpoint=None, facts=None):
    """The one way to a Roofline: from these inputs (a profile's, the what-if editor's, the CLI's
    arguments); RooflineError says which input is missing or wrong. `facts` (from `model_facts`) when
    the caller has read them already, e.g. to find the checkpoint first."""
    from . import compute, load_quant_file, scheme_from_name
    from .result import DEFAULT_BATCHES

    gguf = getattr(checkpoint, "gguf", None)
    if facts is None and gguf is not None and not inputs.config:   # llama.cpp's .gguf: its header is the config
        from .model_facts import facts_from_gguf

        facts = facts_from_gguf(gguf, gguf.source.rsplit("/", 1)[-1].removesuffix(".gguf"), inputs.assume_ignored)
        inputs = inputs.with_changes(config=gguf.source)
    if checkpoint is not None and not inputs.witnessed:   # its tensors settle the weight shapes the config leaves open
        inputs = inputs.with_changes(witnessed=True)
    if not inputs.config:
        raise RooflineError(f"no model config for this profile: set it with `{how_to_set(inputs)}`")
    if not inputs.gpu:
        raise RooflineError(f"no GPU for this profile: press w and type one, or set it with `{how_to_set(inputs)}`")
    if not inputs.count:
        raise RooflineError(f"no GPU count for this profile: press w and type one, or set it with `{how_to_set(inputs)}`")
    facts = facts if facts is not None else model_facts(inputs)
    if inputs.quant:
        scheme = scheme_from_name(inputs.quant)
    else:
        qpath = Path(inputs.quant_config).expanduser() if inputs.quant_config else _quant_beside(inputs)
        scheme = load_quant_file(qpath) if qpath else None
    return compute(facts, inputs.gpu, inputs.count, tp=inputs.tp, ep=inputs.ep, quant=scheme,
                   kv_dtype=inputs.kv_dtype, context=inputs.context,
                   batches=batches or DEFAULT_BATCHES, assumptions=inputs.assumptions, checkpoint=checkpoint)


def _quant_beside(inputs: Inputs) -> Path | None:
    from .gguf_header import is_gguf
    from .model_lookup import quant_file_beside, resolve_model

    if is_gguf(inputs.config or ""):   # a GGUF carries its quantisation in its tensor types
        return None
    path = Path(inputs.config).expanduser()
    return quant_file_beside(path if path.is_file() else resolve_model(inputs.config))


def roofline_for(profile, batches=None):
    """(the profile's Roofline, "") or (None, the one-line reason there is none): what the report, the
    campaign table and the Campaign tab read; efficiency against it then reads N/A."""
    try:
        return compute_inputs(inputs_from_profile(profile), batches), ""
    except (RooflineError, OSError, ValueError, KeyError, TypeError, OverflowError) as exc:
        return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
