"""A crash record keeps how sure its class is: evidence kinds, confidence, the lines to look at."""
from __future__ import annotations

from pathlib import Path

from console.servers.triage import classify_file
from console.store.crashes import CrashRecord, write_crash
from console.store.launches import LaunchRecord

RAY = Path(__file__).parent / "triage_corpus" / "logs" / "verl-4921-ray-actor-died-common-causes-list.log"


def test_a_crash_record_keeps_the_strength_of_its_verdict(gpudeck_home):
    verdict = classify_file(RAY)
    launch = LaunchRecord(id="ray-1", config="ray", script="/x.sh", log=str(RAY), exit_file=None, state="crashed",
                          exit_status=1)
    record = write_crash("local", launch, verdict)
    again = CrashRecord.from_doc(record.to_doc(), "x")
    assert again.cls == "unknown" and again.confidence is not None and again.confidence < 0.6
    assert again.evidence_kinds == tuple(verdict.evidence_kinds)
    assert again.suspicious and all(line > 0 and why for line, _, why in again.suspicious)
    assert any(line.startswith("look at line") for line in again.strength_lines())


def test_an_old_record_without_strength_reads_as_not_known():
    old = CrashRecord.from_doc({"id": "a", "class": "segfault", "time": "", "confidence": "high",
                                "suspicious": [{"line": "7"}]}, "a")
    assert (old.confidence, old.evidence_kinds, old.suspicious, old.strength_lines()) == (None, (), (), [])
