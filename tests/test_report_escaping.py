"""findings.md: text from outside (a model name /v1/models gave, a config's flags, a task) is escaped
where the report writes it, so it never becomes HTML or Markdown markup in the document."""
from __future__ import annotations

import json

from console.cli import main
from console.report.tasks import board_markdown
from profiles.paths import profile_data_dir
from profiles.task_model import Task
from tests.test_report import _section, _table_rows, lab  # noqa: F401 - the stored lab profile

HOSTILE = '<img src=x onerror="alert(1)">[click](javascript:alert(2)) **loud** `tick` a|b'


def test_a_model_name_with_raw_html_reads_as_text_in_findings(lab):  # noqa: F811
    data = profile_data_dir("h200-lab")
    run = json.loads((data / "runs" / "sweep-b.json").read_text())
    run["model"] = HOSTILE
    run["config"] = {"name": "<b>cfg</b>"}
    (data / "runs" / "sweep-b.json").write_text(json.dumps(run))
    out = data / "findings.md"
    assert main(["report", "--profile", "h200-lab", "--offline", "--out", str(out)]) == 0
    text = out.read_text()
    assert "<img" not in text and "<b>" not in text and "[click](javascript:" not in text and "**loud**" not in text
    runs = _section(text, "## Benchmark runs")
    assert "model &lt;img src=x onerror=\"alert(1)\"&gt;\\[click\\](javascript:alert(2)) \\*\\*loud\\*\\* " \
           "\\`tick\\` a\\|b · endpoint" in runs
    assert "launch config &lt;b&gt;cfg&lt;/b&gt;" in runs
    for row in _table_rows(runs):   # the level tables keep their columns
        assert len(row) == 6


def test_names_that_were_plain_stay_as_written():
    from console.safe_text import markdown_code, markdown_text

    assert markdown_text("mem_fraction_static") == "mem_fraction_static"
    assert markdown_text("GLM-5-NVFP4 (8x H200)") == "GLM-5-NVFP4 (8x H200)"
    assert markdown_text("_lead and trail_") == "\\_lead and trail\\_"
    assert markdown_text("one\nline\x1b[2J") == "one line␛\\[2J"
    assert markdown_code("/opt/a`b``c.sh") == "```/opt/a`b``c.sh```"
    assert markdown_code("`x") == "`` `x ``"


def test_task_text_and_links_cannot_open_markup():
    line = board_markdown([Task(id=1, text="<script>x</script> [a](b)", run="r`un")])
    assert "<script>" not in line and "&lt;script&gt;x&lt;/script&gt; \\[a\\](b)" in line
    assert "run ``r`un``" in line


def test_a_note_carrying_outside_text_is_escaped_too(lab):  # noqa: F811
    from profiles import store

    profile = store.load("h200-lab")
    profile.model.config = "<svg onload=alert(3)>"   # its error names it back in the roofline's note
    store.save(profile)
    out = profile_data_dir("h200-lab") / "findings.md"
    assert main(["report", "--profile", "h200-lab", "--offline", "--out", str(out)]) == 0
    roofline = _section(out.read_text(), "## Roofline")
    assert "<svg" not in roofline and "&lt;svg onload=alert(3)&gt;" in roofline
