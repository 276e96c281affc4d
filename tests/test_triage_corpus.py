"""Triage over every real log in the shared corpus (an external sample).

The folder a log sits in is its expected class, except for the few
"healthy-startup" files that stop mid-load (those must say loading /
unknown). Prints accuracy per class; holds overall accuracy at >= 90% and
never lets a crash be called healthy.
"""
from __future__ import annotations

from collections import defaultdict

from console.servers.triage import CRASH_CLASSES, classify_file

FOLDER_CLASS = {
    "cuda-illegal-memory": "cuda-illegal-address",
    "cuda-oom": "oom",
    "engine-dead": "engine-dead",
    "healthy-startup": "healthy",
    "model-load-config": "model-load",
    "nccl": "nccl",
    "port-in-use": "port-in-use",
    "process-killed": "process-killed",
    "runtime-progress": "healthy",
}


# Files whose folder says "healthy" but whose text stops before the server
# is ready: they prove nothing, and `healthy` must be earned.
STOPS_MID_LOAD = {
    "03-vllm-0.10-api-server-version-and-non-default-args.log",
    "07-vllm-engine-kv-cache-size-and-supported-tasks.log",
    "13-triton-trtllm-backend-models-ready-and-server-options.log",
}


def test_corpus_accuracy(shared_dir, capsys):
    logs = sorted(p for p in (shared_dir / "corpus" / "logs").glob("*/*") if p.is_file())
    assert logs, "the shared corpus has no logs"
    per_class = defaultdict(lambda: [0, 0])
    called_healthy = []
    wrong = []
    for path in logs:
        expected = "unknown" if path.name in STOPS_MID_LOAD else FOLDER_CLASS[path.parent.name]
        verdict = classify_file(path)
        got = verdict.cls
        if path.name in STOPS_MID_LOAD:
            assert verdict.state == "loading", f"{path.name}: state {verdict.state}"
        per_class[expected][1] += 1
        if got == expected:
            per_class[expected][0] += 1
        else:
            wrong.append(f"{path.parent.name}/{path.name}: {got}")
        if expected in CRASH_CLASSES and got == "healthy":
            called_healthy.append(path.name)
    total_right = sum(right for right, _ in per_class.values())
    with capsys.disabled():
        print()
        for cls, (right, count) in sorted(per_class.items()):
            print(f"  triage corpus {cls:22s} {right}/{count}  {100 * right / count:5.1f}%")
        print(f"  triage corpus overall {total_right}/{len(logs)}  {100 * total_right / len(logs):.1f}%")
        for line in wrong:
            print(f"  miss: {line}")
    assert not called_healthy, f"crash logs called healthy: {called_healthy}"
    assert total_right / len(logs) >= 0.90
