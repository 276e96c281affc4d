#!/usr/bin/env bash
# The one test command: installs what the tests need, then runs them.
#   bash tests/run.sh [pytest args...]          the full tier (CI runs this)
#   bash tests/run.sh --fast [pytest args...]   the tests that need no real peer and are not
#                                               marked slow, on every core; no apt, no downloads
# - apt packages (openssh-server for the real sshd, tmux for the screen smoke
#   test, prometheus for the fleet tests, slurm-wlm and munge for the
#   two-node cluster) when missing and we are root;
# - a virtualenv in .venv with gpudeck and its test extras;
# - llama-server and the SmolLM2 model (tests/fetch_assets.sh), and a real vLLM
#   (CPU build) with that model, cached outside the clone (tests/fetch_vllm.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi

# the real peers the full tier talks to, from apt
install_peers() {
  local need=()
  command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server)
  command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
  command -v tmux >/dev/null 2>&1 || need+=(tmux)
  command -v prometheus >/dev/null 2>&1 || [ -x /usr/bin/prometheus ] || need+=(prometheus)
  command -v slurmctld >/dev/null 2>&1 || [ -x /usr/sbin/slurmctld ] || need+=(slurm-wlm)
  command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] || need+=(munge)
  if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      echo "installing ${need[*]} with apt-get" >&2
      apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
    else
      echo "missing ${need[*]}: install them (apt-get install ${need[*]}) or run as root" >&2
    fi
  fi
}
[ "$fast" = 1 ] || install_peers

python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >&2 2>/dev/null || true
.venv/bin/python -m pip install -q -c tests/constraints.txt -e '.[test]' >&2

if [ "$fast" = 1 ]; then
  exec .venv/bin/python -m pytest -q -n auto -m "not peer and not slow" "$@"
fi

PYTHON=.venv/bin/python bash tests/fetch_assets.sh

exec .venv/bin/python -m pytest -q "$@"
