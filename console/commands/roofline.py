"""`gpudeck roofline`: the theoretical ceiling for a model on given GPUs, and a measurement's efficiency."""
from __future__ import annotations

import argparse

from ..fmt import UNKNOWN


def register(sub) -> None:
    p = sub.add_parser("roofline", help="theoretical decode tok/s for a model on given GPUs, and efficiency")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model-config", metavar="FILE", help="the model's config.json")
    src.add_argument("--model", metavar="NAME", help="a path, a name in <config>/models/, or a Hugging Face id in the local cache")
    p.add_argument("--quant-config", metavar="FILE", help="hf_quant_config.json (found beside the config when omitted)")
    p.add_argument("--profile", default=argparse.SUPPRESS, help="take [model] and [gpu] from this profile")
    p.add_argument("--gpu", metavar="NAME", help="catalogue name or nvidia-smi name, e.g. 'H100 SXM'")
    p.add_argument("--count", type=int, metavar="N", help="number of GPUs")
    p.add_argument("--tp", type=int, metavar="N", help="tensor-parallel size (default: count)")
    p.add_argument("--ep", type=int, metavar="N", help="expert-parallel size (default: 1)")
    p.add_argument("--quant", metavar="FMT", help="bf16, fp16, fp8, fp8-block, nvfp4, mxfp4, int4-awq[-gN], int4-gptq[-gN], int8")
    p.add_argument("--dtype", metavar="DTYPE",
                   help="the dtype the server loads the weights in, as vLLM/sglang's --dtype (default: the profile's "
                        "launch script's --dtype, else auto: a float32 checkpoint is served in 16 bits)")
    p.add_argument("--kv-dtype", metavar="FMT", help="KV-cache dtype: bf16, fp16, fp8, int8, fp4")
    p.add_argument("--batch", metavar="B,B,..", default="1,2,10,64,256,512", help="batch sizes (default 1,2,10,64,256,512)")
    p.add_argument("--context", type=int, default=4096, metavar="N", help="tokens in each sequence's KV cache (default 4096)")
    p.add_argument("--measured", type=float, metavar="TOK_S", help="a measured output tok/s, for efficiency, MBU and MFU")
    p.add_argument("--measured-batch", type=int, default=1, metavar="B", help="the batch (concurrency) of --measured (default 1)")
    p.add_argument("--run", metavar="FILE|ID",
                   help="a finished sweep to calibrate against (default with --profile: its latest run)")
    p.add_argument("--assume", action="append", default=[], metavar="KEY=VALUE",
                   help="override an assumption, e.g. allreduce_alpha_us=10 (repeatable)")
    p.add_argument("--checkpoint", metavar="DIR",
                   help="the model directory whose safetensors headers are the witness (on the --profile's host "
                        "when given; default with --profile: the model path its launch scripts name)")
    p.add_argument("--assume-ignored", action="append", default=[], metavar="KEY",
                   help="accept a config key the roofline does not read as irrelevant (listed in the output's "
                        "assumptions; repeatable)")
    p.add_argument("--probe", action="store_true",
                   help="measure what the profile's GPUs reach (a plain read, a bf16 GEMM; a few seconds each, with "
                        "the host's PyTorch or CuPy; refused while a process holds a GPU) and print the catalogue "
                        "entry that keeps them for the realistic bound")
    p.add_argument("--save", action="store_true", help="with --probe: add that entry to your gpus.toml")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from .kit import CLIError, emit_json
    from ..roofline import RooflineError

    if args.probe:
        try:
            return _probe(args)
        except RooflineError as exc:
            raise CLIError(str(exc)) from None
    try:
        roof, measured = _compute(args)
        cal, run_name, note, refused = _calibration(args, roof)
    except RooflineError as exc:
        raise CLIError(str(exc)) from None
    except (TypeError, ValueError, OverflowError) as exc:  # a config value of the wrong kind or size
        raise CLIError(f"cannot compute a roofline from these inputs ({type(exc).__name__}: {exc})") from None
    if args.json:
        doc = roof.to_json(measured, cal, run_name)
        if cal is None and note:
            doc["calibration"] = None
            doc["calibration_note"] = note
            if refused is not None:   # the line that was tried and failed its own points, for the record
                doc["calibration_refused"] = refused
        emit_json(doc)
    else:
        print(render_text(roof, measured, cal, run_name, note))
    return 0


def _probe(args: argparse.Namespace) -> int:
    """`--probe`: measure the profile's GPUs, show the figures beside the datasheet, print (or --save) the entry."""
    from profiles import store

    from ..roofline.catalogue import find_gpu, user_catalogue_path
    from ..roofline.errors import RooflineError
    from ..roofline.probe import catalogue_entry, run_probe
    from ..session import HostSession
    from .kit import emit_json, load_profile, run_async

    name = getattr(args, "profile", None) or store.last_used()
    session = HostSession.open(load_profile(name), readonly=True)
    if session.simulated:
        raise RooflineError(f"probe: profile {name} is simulated: there is no GPU to measure")

    async def measure():
        try:
            return await run_probe(session.host)
        finally:
            await session.host.close()

    result = run_async(measure())
    entries = []
    for gpu in result.gpus:
        spec = find_gpu(gpu["name"])
        entries.append((gpu, spec, catalogue_entry(spec, gpu, result)))
    if args.json:
        emit_json({"host": result.host, "library": result.library, "date": result.date,
                   "gpus": [{**gpu, "catalogue_key": spec.key, "datasheet_gbs": spec.bandwidth_gbs,
                             "datasheet_bf16_tflops": spec.tflops.get("bf16")} for gpu, spec, _ in entries]})
    else:
        for gpu, spec, _ in entries:
            print(f"GPU {gpu['index']} {gpu['name']} ({spec.name}): read {gpu['read_gbs']:,.0f} GB/s "
                  f"({gpu['read_gbs'] / spec.bandwidth_gbs:.0%} of {spec.bandwidth_gbs:,.0f}); bf16 GEMM "
                  f"{gpu['bf16_tflops']:,.0f} TFLOP/s ({gpu['bf16_tflops'] / spec.tflops['bf16']:.0%} of "
                  f"{spec.tflops['bf16']:,.0f})")
    gpu, spec, entry = entries[0]   # one entry per chip kind: the first GPU of each speaks for it
    path = user_catalogue_path()
    if args.save:
        existing = path.read_text(encoding="utf-8") if path.is_file() else ""
        if f'key = "{spec.key}"' in existing:
            raise RooflineError(f"probe: {path} already has an entry for {spec.key!r}: put the achievable figures "
                                f"in it by hand:\n{entry}")
        path.parent.mkdir(parents=True, exist_ok=True)
        from profiles.atomic import write_atomic

        write_atomic(path, existing + ("\n" if existing and not existing.endswith("\n") else "") + entry)
        if not args.json:
            print(f"kept in {path}: the realistic bound now uses these figures for {spec.name}")
    elif not args.json:
        print(f"\nto keep them for the realistic bound, add to {path} (or run again with --save):\n\n{entry}")
    return 0


def _calibration(args: argparse.Namespace, roof):
    """(Calibration or None, run name, a note when there is a run but no fit, the refused line's figures)."""
    from pathlib import Path

    from profiles.atomic import StateFileError

    from ..roofline.calibrate import calibrate
    from ..roofline.errors import RooflineError
    from ..roofline.runs import load_one_run, load_runs

    profile = getattr(args, "profile", None)
    if args.run:
        path = Path(args.run)
        if not path.exists():   # a run id: in the profile's runs/, the same profile `bench --list` lists
            from profiles import store

            from ..bench.results import runs_dir

            path = runs_dir(profile or store.last_used()) / f"{args.run}.json"
        try:
            run = load_one_run(path)
        except (StateFileError, ValueError) as exc:
            raise RooflineError(f"--run {args.run}: {getattr(exc, 'reason', None) or exc}") from None
    elif profile:
        from ..bench.results import runs_dir

        run = load_runs(runs_dir(profile)).latest
        if run is None:
            return None, None, None, None
    else:
        return None, None, None, None
    outcome = calibrate(roof, run.tpot_points())
    if outcome.calibration is None:
        tried = outcome.tried.to_json() if outcome.tried is not None else None
        return None, run.name, f"run {run.name}: no fit ({outcome.reason})", tried
    return outcome.calibration, run.name, None, None


def _compute(args: argparse.Namespace):
    from .kit import CLIError, load_profile
    from ..roofline.from_profile import Inputs, compute_inputs, model_facts
    from ..roofline.model_lookup import resolve_model

    prof_model = prof_gpu = None
    profile_name = getattr(args, "profile", None)
    if profile_name:
        prof = load_profile(profile_name)
        prof_model, prof_gpu = prof.model, prof.gpu
    config = args.model_config or (str(resolve_model(args.model)) if args.model else None)
    if config is None and prof_model is not None:
        config = prof_model.config or (str(resolve_model(prof_model.name)) if prof_model.name else None)
    headers, why, serving = _checkpoint(args)   # first: its tensors settle the weight shapes the config leaves open
    gguf = headers.gguf if headers is not None and config is None else None
    if gguf is not None:   # llama.cpp's launch names a .gguf: its header is the config
        config = gguf.source
    if config is None:
        raise CLIError("no model: give --model-config FILE, --model NAME, or --profile P with [model] config", 2)
    gpu_name = args.gpu or (prof_gpu.name if prof_gpu else None)
    count = args.count if args.count is not None else (prof_gpu.count if prof_gpu else None)
    if not gpu_name:
        raise CLIError("no GPU: give --gpu NAME (or a profile with [gpu] name)", 2)
    if count is None:
        raise CLIError("no GPU count: give --count N (or a profile with [gpu] count)", 2)
    if count < 1:  # bad input is a usage error (2), as argparse's own refusals are
        raise CLIError(f"--count must be 1 or more, got {count}", 2)
    inputs = Inputs(config=config, gpu=gpu_name, count=count, tp=args.tp, ep=args.ep,
                    quant=args.quant or (prof_model.quant if prof_model else None),
                    kv_dtype=args.kv_dtype or (prof_model.kv_dtype if prof_model else None),
                    quant_config=args.quant_config or (prof_model.quant_config if prof_model else None),
                    context=args.context, assumptions=dict(_assumption(a) for a in args.assume),
                    assume_ignored=tuple(args.assume_ignored), profile=profile_name)
    batches = _batches(args.batch)
    launch_dtype, launch_quant, script = serving
    inputs = inputs.with_changes(witnessed=headers is not None, serve_dtype=args.dtype or launch_dtype)
    if not args.quant and not inputs.quant and launch_quant in _LAUNCH_QUANT:
        inputs = inputs.with_changes(quant=_LAUNCH_QUANT[launch_quant])
    if gguf is not None:
        from ..roofline.model_facts import facts_from_gguf

        facts = facts_from_gguf(gguf, gguf.source.rsplit("/", 1)[-1].removesuffix(".gguf"), inputs.assume_ignored)
    else:
        facts = model_facts(inputs)
    if why and facts.headers is None:
        facts.warnings.append(why)
    if not args.dtype and launch_dtype:
        facts.assumptions.append(f"weights served as --dtype {launch_dtype} (launch script {script})")
    if not args.quant and launch_quant:
        facts.assumptions.append(f"launch script {script} serves with --quantization {launch_quant}"
                                 + ("" if launch_quant in _LAUNCH_QUANT else
                                    " (read from the checkpoint's own quantization config)"))
    roof = compute_inputs(inputs, batches, checkpoint=headers, facts=facts)
    chosen = roof.setup.gpu.name
    if chosen.casefold() != gpu_name.casefold():  # 'H100' is one of several: say which one counts
        import sys

        sys.stderr.write(f"gpudeck: GPU {gpu_name!r} taken as {chosen!r} from the catalogue "
                         "(give the full name to choose another)\n")
    measured = None
    if args.measured is not None:
        if args.measured <= 0:
            raise CLIError(f"--measured must be a positive tok/s, got {args.measured}", 2)
        if args.measured_batch < 1:
            raise CLIError(f"--measured-batch must be >= 1, got {args.measured_batch}", 2)
        measured = roof.efficiency(args.measured, args.measured_batch)
    return roof, measured


# vLLM / sglang --quantization values that name one format; others (modelopt, compressed-tensors, ...)
# say "as the checkpoint's quantization config says", which the config is read for anyway.
_LAUNCH_QUANT = {"fp8": "fp8", "awq": "int4-awq", "awq_marlin": "int4-awq", "gptq": "int4-gptq",
                 "gptq_marlin": "int4-gptq", "mxfp4": "mxfp4", "nvfp4": "nvfp4", "modelopt_fp4": "nvfp4"}
_NO_LAUNCH: tuple[str | None, str | None, str] = (None, None, "")


def _checkpoint(args: argparse.Namespace):
    """(shard headers to witness the config, or None; why not, or ""; the launch script's (--dtype,
    --quantization, script name)): --checkpoint DIR, or the profile's launch-script model path."""
    from pathlib import Path

    from ..roofline.gguf_header import is_gguf
    from ..roofline.gguf_model import headers_from_gguf
    from ..roofline.gguf_header import read_local as read_gguf
    from ..roofline.shard_headers import read_local

    profile_name = getattr(args, "profile", None)
    if args.checkpoint and not profile_name:
        if is_gguf(args.checkpoint):
            return headers_from_gguf(read_gguf(args.checkpoint)), "", _NO_LAUNCH
        headers = read_local(Path(args.checkpoint))
        why = "" if headers is not None else f"--checkpoint {args.checkpoint}: no safetensors checkpoint there"
        return headers, why, _NO_LAUNCH
    if not profile_name:
        return None, "", _NO_LAUNCH
    from ..roofline.checkpoint_source import checkpoint_for_profile, launch_serving
    from ..session import HostSession
    from .kit import load_profile, run_async

    session = HostSession.open(load_profile(profile_name), readonly=True)
    if session.simulated:
        return None, "checkpoint not read: the profile is simulated", _NO_LAUNCH

    async def read():
        try:
            try:
                serving = await launch_serving(session)
            except Exception:  # scripts unreadable: checkpoint_for_profile says why
                serving = _NO_LAUNCH
            return (*await checkpoint_for_profile(session, args.checkpoint), serving)
        finally:
            await session.host.close()

    headers, why, serving = run_async(read())
    return headers, "" if headers is not None else f"checkpoint not read: {why}", serving


def _batches(text: str) -> list[int]:
    from .kit import CLIError

    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise CLIError(f"--batch must be whole numbers separated by commas, got {text!r}", 2) from None
    if not values or min(values) < 1:
        raise CLIError(f"--batch values must be >= 1, got {text!r}", 2)
    return values


def _assumption(text: str) -> tuple[str, object]:
    from .kit import CLIError

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise CLIError(f"--assume takes KEY=VALUE, got {text!r}", 2)
    raw = raw.strip()
    if raw.lower() in ("true", "false", "yes", "no"):
        return key.strip(), raw.lower() in ("true", "yes")
    try:
        return key.strip(), float(raw) if any(c in raw for c in ".eE") else int(raw)
    except ValueError:
        raise CLIError(f"--assume {key}: expected a number or true/false, got {raw!r}", 2) from None


def calibration_line(cal) -> str:
    eta = f"{cal.eta:.1%}" if cal.eta else UNKNOWN
    r2 = f"{cal.r2:.3f}" if cal.r2 is not None else "N/A (2 levels)"
    return (f"eta {eta} of the ideal bandwidth, overhead {cal.overhead_s * 1e3:.2f} ms/step, r2 {r2}, "
            f"levels {', '.join(str(b) for b in cal.levels_used)}")


def quant_line(setup) -> str:
    """Which quantisation the numbers use and where it was read from."""
    if setup.scheme is None and setup.facts.gguf:
        return f"the GGUF's own tensor types ({setup.facts.serving_dtype_source})"
    if setup.scheme is None:
        return f"none found (no --quant, no hf_quant_config.json beside the config, no quantization_config in it): " \
               f"{setup.facts.weight_dtype_bytes} B/param, {setup.facts.serving_dtype} as served " \
               f"({setup.facts.serving_dtype_source})"
    return f"{setup.scheme.method} from {setup.scheme.source}"


def render_text(roof, measured, cal=None, run_name: str | None = None, note: str | None = None) -> str:
    """The headline, one row per batch, the calibration when a run was given, then every assumption."""
    s = roof.setup
    f = s.facts
    lines = []
    ideal1, real1 = roof.single_stream_ideal, roof.single_stream_realistic
    if measured is not None and measured.batch == 1:
        lines.append(f"single stream  {measured.measured_tok_s:.2f} / {ideal1:.0f} tok/s = {measured.efficiency_pct:.1f}% of the ideal roofline"
                     f"   realistic bound {real1:.0f} tok/s -> {measured.efficiency_realistic_pct:.1f}%")
    else:
        lines.append(f"single stream  ideal {ideal1:.0f} tok/s   realistic {real1:.0f} tok/s")
    lines.append(f"{f.name} · {f.total_params / 1e9:.1f}B total, {f.active_params / 1e9:.1f}B active · "
                 f"{s.count} x {s.gpu.name} ({s.gpu.bandwidth_gbs / 1000:.2f} TB/s each, {s.gpu.interconnect}) · "
                 f"TP{s.tp}{f' EP{s.ep}' if s.ep > 1 else ''} · ctx {s.context}")
    lines.append(f"quant: {quant_line(s)}")
    lines.append(f"weights: {roof.weights_from()}")
    for warning in roof.warnings():
        lines.append(f"warning: {warning}")
    for assumed in roof.assumption_notes():
        lines.append(f"assumed: {assumed}")
    lines.append("")
    fit_head = f"  {'fitted tok/s':>12}" if cal else ""
    lines.append(f"{'batch':>6}  {'ideal tok/s':>12}  {'realistic':>10}  {'mem ms':>8}  {'compute ms':>10}  {'comm ms':>8}{fit_head}  bound")
    for lv in roof.levels:
        fitted = f"  {cal.tok_s(roof, lv.batch):>12.1f}" if cal else ""
        lines.append(f"{lv.batch:>6}  {lv.tok_s_ideal:>12.1f}  {lv.tok_s_realistic:>10.1f}  {lv.t_mem_s * 1e3:>8.2f}  "
                     f"{lv.t_compute_s * 1e3:>10.2f}  {lv.t_comm_s * 1e3:>8.2f}{fitted}  {lv.bound_detail}")
    if cal is not None:
        from ..roofline.calibrate import dominant_term

        lines.append("")
        lines.append(f"calibration from run {run_name}: {calibration_line(cal)}")
        lines.append(f"  {dominant_term(roof, cal, 1)}")
    elif note:
        lines.append("")
        lines.append(f"calibration: {note}" if "no fit" in note else f"calibration: N/A ({note})")
    if measured is not None:
        lines.append("")
        lines.append(f"measured {measured.measured_tok_s:g} tok/s at batch {measured.batch}: efficiency {measured.efficiency_pct:.1f}% "
                     f"(realistic {measured.efficiency_realistic_pct:.1f}%) · MBU {measured.mbu_pct:.1f}% · MFU {measured.mfu_pct:.2f}%")
    lines.append("")
    lines.append("assumptions")
    for key, value in roof.assumptions().items():
        lines.append(f"  {key:<28} {value}")
    return "\n".join(lines)
