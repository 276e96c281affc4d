"""Offline commands start fast: they import no UI, no network client and no host runtime.

Each command runs in a fresh interpreter under `-X importtime`; the modules
it imported are read from that report. Import time itself is not asserted
(it depends on the machine); what is imported is.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"

# the TUI, the HTTP clients and SSH: none of them is needed to print or read local files
HEAVY = {"textual", "httpx", "asyncssh", "aiohttp"}
# settling launches needs the host runtime; a command that is not about a profile never does
RUNTIME = "console.runtime"

OFFLINE = {
    "help": ["--help"],
    "triage": ["triage", str(FIXTURES / "logs" / "sglang-kv-cache-oom-at-start.log")],
    "roofline": ["roofline", "--model", str(FIXTURES / "model-configs" / "Llama-3.2-1B.json"),
                 "--gpu", "H100 SXM", "--count", "1"],
    "profiles list": ["profiles", "list"],
    # about a profile: the runtime is imported only when a launch needs settling (none here)
    "tasks list": ["tasks", "list"],
    "campaign list": ["campaign", "list"],
}


def imported_modules(args: list[str], home: Path) -> tuple[set[str], subprocess.CompletedProcess]:
    env = dict(os.environ, GPUDECK_HOME=str(home), PYTHONPATH=str(ROOT))
    env.pop("PYTHONIMPORTTIME", None)
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "console", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":      # the report's header line
                names.add(name)
    return names, done


@pytest.mark.parametrize("command", list(OFFLINE))
def test_offline_command_imports_nothing_heavy(command, tmp_path):
    args = OFFLINE[command]
    names, done = imported_modules(args, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "console.cli" in names, "the import report was not read"
    heavy = sorted(n for n in names if n.split(".")[0] in HEAVY)
    assert heavy == [], f"`gpudeck {command}` imported {heavy[:8]}"
    runtime = sorted(n for n in names if n == RUNTIME or n.startswith(RUNTIME + "."))
    assert runtime == [], f"`gpudeck {command}` imported the host runtime: {runtime[:8]}"
