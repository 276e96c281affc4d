"""Launch records are read like every other record: a Scan, one line per bad file, never a wrong type."""
from __future__ import annotations

import json
import os

import pytest

from console.store import launches
from console.store.launches import LaunchRecord


def _write(name: str, doc) -> None:
    folder = launches.launches_dir("local")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(doc if isinstance(doc, str) else json.dumps(doc))


def test_a_record_reads_back_as_saved(gpudeck_home):
    record = LaunchRecord(id="smol-1", config="smol", script="/s.sh", log="/l.log", exit_file="/l.log.exit",
                          pid=42, pgid=42, state="ready", port=8080, flags={"tp": 2}, escaped=[7])
    launches.save("local", record)
    found = launches.read_launches("local")
    assert found.unreadable == [] and found.records == [record]


@pytest.mark.parametrize("doc, reason", [
    ({"id": "a", "config": "c", "pgid": "12; rm -rf /"}, "pgid: expected a whole number"),
    ({"id": "a", "config": "c", "started_at": "yesterday"}, "started_at: expected a time"),
    ({"id": "a", "config": "c", "state": "exploded"}, "state: expected one of"),
    ({"id": "a", "config": "c", "escaped": [1, "x"]}, "escaped: expected a list of pids"),
    ({"id": "a", "config": "c", "flags": ["tp"]}, "flags: expected a table"),
    ({"id": "../a", "config": "c"}, "id: not a launch id"),
    ({"config": "c"}, "id: expected text"),
    ([1, 2], "expected a JSON object"),
    ("{not json", "Expecting property name"),
])
def test_a_bad_record_is_one_unreadable_line_and_the_good_ones_still_read(gpudeck_home, doc, reason):
    launches.save("local", LaunchRecord(id="good-1", config="good", script=None, log=None, exit_file=None))
    _write("bad.json", doc)
    found = launches.read_launches("local")
    assert [r.id for r in found.records] == ["good-1"]
    assert len(found.unreadable) == 1
    line = found.unreadable[0].line
    assert line.startswith(f"{launches.launches_dir('local') / 'bad.json'}: unreadable launch record (")
    assert reason in line and "\n" not in line


def test_a_fifo_or_a_huge_file_is_refused_without_reading_it(gpudeck_home):
    folder = launches.launches_dir("local")
    folder.mkdir(parents=True)
    os.mkfifo(folder / "pipe.json")   # opening it for a plain read would block for ever
    with open(folder / "huge.json", "wb") as fh:
        fh.truncate(launches.MAX_RECORD_BYTES + 1)
    found = launches.read_launches("local")
    reasons = sorted(u.reason for u in found.unreadable)
    assert found.records == [] and len(reasons) == 2
    assert "over the" in reasons[0] and "not a regular file" in reasons[1]


def test_the_writer_refuses_an_id_that_is_a_path(gpudeck_home):
    with pytest.raises(ValueError, match="not a name gpudeck writes"):
        launches.save("local", LaunchRecord(id="../../escape", config="c", script=None, log=None, exit_file=None))
    assert not (launches.launches_dir("local").parent / "escape.json").exists()


def test_a_junk_slurm_part_is_a_job_with_no_id_and_junk_effective_flags_are_not_seen(gpudeck_home):
    from console.slurm.launch import job_id
    from console.store.slurm_job import SlurmJob

    _write("j.json", {"id": "j", "config": "c", "state": "loading", "slurm": "junk", "effective": [1]})
    found = launches.read_launches("local")
    assert found.unreadable == []
    record = found.records[0]
    assert record.slurm == SlurmJob() and job_id(record) is None and record.effective is None
