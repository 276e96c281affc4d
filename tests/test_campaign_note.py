"""A cell's note says a cause once, however many visits meet it."""
from __future__ import annotations

from console.campaign.runner import add_note
from console.store import campaigns as st


def test_a_cause_met_at_every_visit_is_said_once():
    cell = st.Cell(name="twin_a", base="twin_a")
    for _visit in range(3):   # no nvidia-smi on the host: every visit's GPU check says so
        add_note(cell, "GPU check skipped: no-driver (nvidia-smi not found)")
    add_note(cell, "stop failed: timeout")
    assert cell.note == "GPU check skipped: no-driver (nvidia-smi not found); stop failed: timeout"
