"""Triage over every real log in the shared corpus (an external sample).

The folder a log sits in is its expected class. Prints accuracy per class;
holds overall accuracy at >= 90% and never lets a crash be called healthy.
"""
from __future__ import annotations

from collections import defaultdict

from console.triage import CRASH_CLASSES, classify_file

FOLDER_CLASS = {
    "cuda-illegal-memory": "cuda-illegal-address",
    "cuda-oom": "cuda-oom",
    "engine-dead": "engine-dead",
    "healthy-startup": "healthy",
    "model-load-config": "model-load",
    "nccl": "nccl",
    "port-in-use": "port-in-use",
    "process-killed": "process-killed",
    "runtime-progress": "healthy",
}


def test_corpus_accuracy(shared_dir, capsys):
    logs = sorted(p for p in (shared_dir / "corpus" / "logs").glob("*/*") if p.is_file())
    assert logs, "the shared corpus has no logs"
    per_class = defaultdict(lambda: [0, 0])
    called_healthy = []
    wrong = []
    for path in logs:
        expected = FOLDER_CLASS[path.parent.name]
        got = classify_file(path).cls
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
