"""The findings report opens with a summary a team reads in one screen: the answer (the newest
campaign's verdict and its interval), the crashes by class, the ceiling and the efficiency; the
details follow. An older report gets the summary under its title, the operator's notes kept; the
roofline section names the run it reads."""
from __future__ import annotations

from console.report import write_report
from profiles import store
from profiles.profile import profile_from_dict
from tests.test_report import _section, lab  # noqa: F401 - the fixture


def test_the_report_starts_with_its_summary(lab):  # noqa: F811
    path, _ = write_report(lab, live=False)
    text = path.read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Summary"
    summary = _section(text, "## Summary")
    assert len(summary.splitlines()) <= 10  # one screen
    assert "**Answer:** no campaign has run on this host" in summary
    assert "**Crashes:** 1 × cuda-illegal-address (configs: tp8-ep8-memsafe)" in summary
    assert "**Ceiling and efficiency:** not worked out: the profile names no model config" in summary


def test_an_older_report_gets_the_summary_under_its_title_and_keeps_the_notes(lab):  # noqa: F811
    path, _ = write_report(lab, live=False)
    text = path.read_text()
    start, end = text.index("<!-- gpudeck:begin summary -->"), text.index("<!-- gpudeck:end summary -->")
    older = text[:start] + text[end + len("<!-- gpudeck:end summary -->"):].lstrip("\n")
    path.write_text(older + "\n## My notes\n\nKeep this paragraph.\n")
    write_report(lab, live=False)
    text = path.read_text()
    assert text.count("## Summary\n") == 1
    assert text.index("# Findings: h200-lab") < text.index("## Summary") < text.index("## Host and GPUs")
    assert text.count("Keep this paragraph.") == 1


def test_ceiling_efficiency_and_the_roofline_run_named(lab, shared_dir):  # noqa: F811
    profile = profile_from_dict("h200-lab", {
        "transport": "local", "gpu": {"name": "H200", "count": 8},
        "model": {"config": str(shared_dir / "model-configs" / "GLM-5-NVFP4.json"),
                  "quant_config": str(shared_dir / "model-configs" / "GLM-5-NVFP4.hf_quant_config.json")}})
    store.save(profile)
    out, data = write_report(profile, live=False)
    assert data.roofline is not None, data.roofline_note
    text = out.read_text()
    summary = _section(text, "## Summary")
    level = next(lv for lv in data.roofline["levels"] if lv["batch"] == 1)
    assert "best measured 11.02 tok/s at batch 1" in summary
    assert f"= {100 * 11.02 / level['tok_s_ideal']:.1f}% efficiency (run sweep-b)" in summary
    roofline = _section(text, "## Roofline")
    assert "- Measured: run sweep-b (the newest run that measured)" in roofline
    assert "server http://127.0.0.1:30000, model GLM-5-NVFP4" in roofline
