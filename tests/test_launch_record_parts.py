"""A launch record's `slurm` and `unreached` parts are typed, frozen records read field by field.

Records on disk were written by older gpudecks and may have been edited since: every record an
older gpudeck wrote reads the same and is written back with the same keys, and a part with missing
keys, unknown keys or fields of the wrong type still loads, each bad field read as unknown."""
from __future__ import annotations

import dataclasses
import json

import pytest

from console.outage_note import OutageNote
from console.servers.launching import job_id, where
from console.servers.unreached import why_unknown
from console.store import launches
from console.store.launches import LaunchRecord
from console.store.slurm_job import SlurmJob

# the Slurm part as the previous gpudeck wrote it: submit's keys, then scontrol's, a rank, an end
OLD_SLURM = {
    "job_id": "4242", "state": "FAILED", "nodes": ["n1", "n2"], "batch_host": "n1", "head_addr": "10.0.0.7",
    "log_dir": "/scratch/logs", "nodes_asked": 2,
    "ranks": [{"rank": 0, "node": "n1", "path": "/scratch/logs/run-1.0.log", "ready": True,
               "class": None, "state": None}],
    "end": {"state": "FAILED", "exit_status": 1, "signal": None, "stopped_by_us": False, "cls": "exit-nonzero",
            "summary": "exit 1", "crashed": True},
    "failed_rank": 1, "failed_node": "n2",
    "owner": {"name": "gpudeck-run", "user": "root", "comment": "gpudeck:run-1"},
    "num_tasks": 2, "num_nodes": 2, "gpus": 8, "restarts": 1,
    "unanswered": {"since": 1765000000.5, "error": "slurmctld: connection refused"},
}
OLD_UNREACHED = {"since": 1765000000.0, "error": "ssh: connection reset"}


def _write(doc: dict) -> None:
    folder = launches.launches_dir("local")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{doc['id']}.json").write_text(json.dumps(doc))


def _read_one() -> LaunchRecord:
    found = launches.read_launches("local")
    assert found.unreadable == [], [u.line for u in found.unreadable]
    assert len(found.records) == 1
    return found.records[0]


def test_an_old_slurm_record_reads_typed_and_is_written_back_unchanged(gpudeck_home):
    _write({"id": "run-1", "config": "run", "state": "crashed", "slurm": OLD_SLURM})
    record = _read_one()
    s = record.slurm
    assert isinstance(s, SlurmJob)
    assert (s.job_id, s.nodes, s.head_addr, s.failed_rank, s.gpus) == ("4242", ("n1", "n2"), "10.0.0.7", 1, 8)
    assert s.unanswered == OutageNote(1765000000.5, "slurmctld: connection refused")
    assert s.end is not None and s.end["state"] == "FAILED"
    assert where(record) == "job 4242 (FAILED) on n1,n2 · rank 1 on n2"
    launches.save("local", record)
    on_disk = json.loads((launches.launches_dir("local") / "run-1.json").read_text())
    assert on_disk["slurm"] == OLD_SLURM
    assert SlurmJob.from_json(OLD_SLURM).to_json() == OLD_SLURM


def test_an_old_outage_note_reads_typed_and_is_written_back_unchanged(gpudeck_home):
    _write({"id": "run-2", "config": "run", "state": "loading", "pgid": 77, "unreached": OLD_UNREACHED})
    record = _read_one()
    assert record.unreached == OutageNote(1765000000.0, "ssh: connection reset")
    assert record.shown_state == "unknown" and why_unknown(record).endswith("ssh: connection reset")
    launches.save("local", record)
    on_disk = json.loads((launches.launches_dir("local") / "run-2.json").read_text())
    assert on_disk["unreached"] == OLD_UNREACHED and on_disk["slurm"] is None


def test_a_submitted_job_with_few_keys_and_unknown_ones_reads_with_the_rest_unknown(gpudeck_home):
    _write({"id": "run-3", "config": "run", "state": "launching",
            "slurm": {"job_id": "7", "state": "PENDING", "from_a_newer_gpudeck": {"x": 1}}})
    record = _read_one()
    assert record.slurm == SlurmJob(job_id="7", state="PENDING")
    assert record.shown_state == "launching" and job_id(record) == "7"
    assert "from_a_newer_gpudeck" not in record.to_doc()["slurm"]
    assert record.to_doc()["slurm"]["nodes"] == [] and "unanswered" not in record.to_doc()["slurm"]


BAD_FIELDS = {
    "job_id": "1; rm -rf /", "state": 3, "nodes": "n1,n2", "batch_host": ["n1"], "head_addr": 10,
    "log_dir": {"x": 1}, "nodes_asked": "2", "ranks": {"0": "x"}, "end": "FAILED", "failed_rank": True,
    "failed_node": 2, "owner": "root", "num_tasks": 1.5, "num_nodes": None, "gpus": "8", "restarts": [],
    "reused": 1, "unanswered": "junk",
}


@pytest.mark.parametrize("key", sorted(BAD_FIELDS))
def test_a_field_of_the_wrong_type_reads_unknown_and_the_rest_still_loads(gpudeck_home, key):
    _write({"id": "run-4", "config": "run", "state": "loading",
            "slurm": {"job_id": "42", "nodes": ["n1"]} | {key: BAD_FIELDS[key]}})
    record = _read_one()
    assert record.slurm is not None
    value = getattr(record.slurm, key)
    assert value in (None, ()), f"{key}: {value!r} kept"
    if key != "job_id":
        assert job_id(record) == "42"
    if key != "nodes":
        assert record.slurm.nodes == ("n1",)
    assert record.shown_state == "loading"
    where(record)   # every view's line about it is still written


def test_junk_parts_never_crash_a_reader(gpudeck_home):
    cases = ["junk", 7, [], {"nodes": [1, None, "n1", ""]}, {"ranks": [1, "x", {"rank": 0}]},
             {"unanswered": {"since": True, "error": 5}}, {"unanswered": {"since": -1, "error": "a\x1b[2Jb"}}]
    for i, part in enumerate(cases):
        _write({"id": f"r{i}", "config": f"c{i}", "state": "loading", "slurm": part,
                "unreached": part if not isinstance(part, list) else None})
    found = launches.read_launches("local")
    assert found.unreadable == [] and len(found.records) == len(cases)
    by_config = {r.config: r for r in found.records}
    assert by_config["c0"].slurm == SlurmJob() and by_config["c0"].unreached is None
    assert by_config["c3"].slurm is not None and by_config["c3"].slurm.nodes == ("n1",)
    assert by_config["c4"].slurm is not None and by_config["c4"].slurm.ranks == ({"rank": 0},)
    note = by_config["c5"].slurm.unanswered if by_config["c5"].slurm else None
    assert note == OutageNote(None, "")
    note = by_config["c6"].slurm.unanswered if by_config["c6"].slurm else None
    assert note is not None and note.since is None and "\x1b" not in note.error
    for record in found.records:
        where(record), why_unknown(record), record.to_json()


def test_the_parts_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SlurmJob().job_id = "1"   # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        OutageNote(None, "").error = "x"   # type: ignore[misc]
