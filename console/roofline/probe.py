"""`gpudeck roofline --probe`: measure what a profile's GPUs reach (a plain read, a bf16 GEMM), to keep beside
the datasheet as the catalogue's `achievable` figures the realistic bound uses.

The measurement runs on the profile's host with its own Python and PyTorch (or CuPy): a few seconds per GPU,
a 2 GiB buffer at most. It is refused while any process holds a GPU (a server's traffic would make the
figure wrong, and the probe would slow the server), and refused in one line where neither library is
installed. Nothing here imports either library: the script is text run on the host.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from .errors import RooflineError

TIMEOUT_S = 180.0

# Run on the host as `python3 -c SCRIPT`: prints one JSON document on its last line.
SCRIPT = r'''
import json, sys, time
def out(doc):
    print(json.dumps(doc)); sys.exit(0)
lib = None
try:
    import torch
    if torch.cuda.is_available():
        lib = "torch"
except Exception:
    pass
if lib is None:
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        lib = "cupy"
    except Exception:
        pass
if lib is None:
    out({"error": "neither PyTorch with CUDA nor CuPy is importable by this Python"})
res = {"library": lib, "gpus": []}
if lib == "torch":
    res["version"] = torch.__version__
    for i in range(torch.cuda.device_count()):
        dev = torch.device("cuda", i)
        free, _ = torch.cuda.mem_get_info(i)
        n = int(min(2 * 2**30, free // 4) // 2)
        x = torch.empty(n, dtype=torch.bfloat16, device=dev).normal_()
        for _ in range(2): x.sum()
        torch.cuda.synchronize(dev); t = time.perf_counter(); reps = 10
        for _ in range(reps): x.sum()
        torch.cuda.synchronize(dev); read = n * 2 * reps / (time.perf_counter() - t) / 1e9
        del x
        a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev); b = torch.randn_like(a)
        for _ in range(3): a @ b
        torch.cuda.synchronize(dev); t = time.perf_counter(); reps = 20
        for _ in range(reps): a @ b
        torch.cuda.synchronize(dev); tflops = 2 * 8192**3 * reps / (time.perf_counter() - t) / 1e12
        res["gpus"].append({"index": i, "name": torch.cuda.get_device_name(i), "read_gbs": read, "bf16_tflops": tflops})
else:
    import cupy as cp
    res["version"] = cp.__version__
    for i in range(cp.cuda.runtime.getDeviceCount()):
        with cp.cuda.Device(i):
            free, _ = cp.cuda.runtime.memGetInfo()
            n = int(min(2 * 2**30, free // 4) // 2)
            x = cp.ones(n, dtype=cp.float16)
            for _ in range(2): x.sum()
            cp.cuda.Device(i).synchronize(); t = time.perf_counter(); reps = 10
            for _ in range(reps): x.sum()
            cp.cuda.Device(i).synchronize(); read = n * 2 * reps / (time.perf_counter() - t) / 1e9
            del x
            a = cp.ones((8192, 8192), dtype=cp.float16); b = cp.ones_like(a)
            for _ in range(3): a @ b
            cp.cuda.Device(i).synchronize(); t = time.perf_counter(); reps = 20
            for _ in range(reps): a @ b
            cp.cuda.Device(i).synchronize(); tflops = 2 * 8192**3 * reps / (time.perf_counter() - t) / 1e12
            name = cp.cuda.runtime.getDeviceProperties(i)["name"].decode()
            res["gpus"].append({"index": i, "name": name, "read_gbs": read, "bf16_tflops": tflops, "gemm_dtype": "fp16"})
out(res)
'''


@dataclass(frozen=True)
class ProbeResult:
    host: str
    library: str            # "torch" or "cupy", with its version
    gpus: list[dict[str, Any]]
    date: str

    def source(self, gpu: dict[str, Any]) -> str:
        """The `figures_from.achievable` sentence of one GPU's figures."""
        gemm = "an fp16" if gpu.get("gemm_dtype") == "fp16" else "a bf16"
        return (f"measured {self.date} on {self.host} GPU {gpu['index']} ({gpu['name']}) by gpudeck roofline --probe "
                f"({self.library}): a 2 GiB read at {gpu['read_gbs']:,.0f} GB/s; {gemm} 8192^3 GEMM at "
                f"{gpu['bf16_tflops']:,.0f} TFLOP/s")


def busy_pids(nvidia_smi_csv: str) -> list[str]:
    """The compute processes `nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader` lists."""
    return [line.strip() for line in nvidia_smi_csv.splitlines() if line.strip() and "No running" not in line]


def parse_output(stdout: str, host: str) -> ProbeResult:
    """The script's last line as a result; RooflineError with its own words when it refused."""
    lines = [line for line in stdout.strip().splitlines() if line.strip()]
    try:
        doc = json.loads(lines[-1]) if lines else None
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise RooflineError(f"probe on {host}: no result (output: {stdout.strip()[-200:]!r})")
    if doc.get("error"):
        raise RooflineError(f"probe on {host}: {doc['error']}; install PyTorch (or CuPy) for the host's python3 "
                            "to measure, or keep figures measured elsewhere in the catalogue's 'achievable'")
    gpus = [g for g in doc.get("gpus") or [] if isinstance(g, dict)
            and all(isinstance(g.get(k), (int, float)) and g[k] > 0 for k in ("read_gbs", "bf16_tflops"))]
    if not gpus:
        raise RooflineError(f"probe on {host}: the library found no GPU to measure")
    return ProbeResult(host, f"{doc.get('library')} {doc.get('version', '')}".strip(), gpus,
                       time.strftime("%Y-%m-%d"))


async def run_probe(host, python: str = "python3", timeout: float = TIMEOUT_S) -> ProbeResult:
    """Measure every GPU of `host`; RooflineError when a process holds a GPU or no library can measure."""
    from ..hosts import HostError

    name = getattr(host, "name", "host")
    try:
        apps = await host.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory",
                               "--format=csv,noheader"], timeout=30)
    except HostError as exc:
        raise RooflineError(f"probe on {name}: nvidia-smi could not be run ({exc})") from None
    if not apps.ok:
        raise RooflineError(f"probe on {name}: nvidia-smi failed ({apps.stderr.strip()[:200]})")
    held = busy_pids(apps.stdout)
    if held:
        raise RooflineError(f"probe on {name}: refused while a process holds a GPU ({'; '.join(held[:4])}): its "
                            "traffic would make the figures wrong and the probe would slow it; stop the server first")
    try:
        result = await host.run([python, "-c", SCRIPT], timeout=timeout)
    except HostError as exc:
        raise RooflineError(f"probe on {name}: {exc}") from None
    if not result.ok and not result.stdout.strip():
        raise RooflineError(f"probe on {name}: {python} failed ({result.stderr.strip()[-200:]})")
    return parse_output(result.stdout, name)


def catalogue_entry(gpu_spec, probed: dict[str, Any], result: ProbeResult) -> str:
    """A `[[gpu]]` entry for the user's gpus.toml: the catalogue's entry with the measured `achievable` figures."""
    def q(text: str) -> str:
        return json.dumps(text)   # a TOML basic string is a JSON string

    g = gpu_spec
    lines = ["[[gpu]]", f"key = {q(g.key)}", f"name = {q(g.name)}",
             f"aliases = [{', '.join(q(a) for a in g.aliases[2:])}]", f"memory_gb = {g.memory_gb}",   # name and key come first
             f"bandwidth_gbs = {g.bandwidth_gbs}",
             "tflops = { " + ", ".join(f"{k} = {v}" for k, v in g.tflops.items()) + " }",
             f"interconnect = {q(g.interconnect)}"]
    if g.link_gbs is not None:
        lines.append(f"link_gbs = {g.link_gbs}")
    lines += [f"allreduce_alpha_us = {g.allreduce_alpha_us}", f"allreduce_beta_gbs = {g.allreduce_beta_gbs}",
              f"achievable = {{ bandwidth_gbs = {probed['read_gbs']:.0f}, tflops = {{ bf16 = {probed['bf16_tflops']:.0f} }} }}",
              "[gpu.figures_from]"]
    figures = {**g.figures_from, "achievable": result.source(probed)}
    lines += [f"{k} = {q(v)}" for k, v in figures.items()]
    return "\n".join(lines) + "\n"
