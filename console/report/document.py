"""The findings report: one Markdown document per profile, kept current.

Each generated section sits between `<!-- gpudeck:begin ID -->` and
`<!-- gpudeck:end ID -->` markers. Writing the report again replaces what is
between the markers and leaves everything else (the operator's own notes)
alone, so a rerun refreshes the document instead of growing it.

Data comes from the profile's files (runs/, crashes/, servers/, tasks.toml),
read defensively: a missing folder is a sentence, a broken file is named.
Live parts (GPU snapshot, launch configs) go through the public CLI in a
subprocess with a timeout, so a slow host costs a note, never the report. The
roofline is computed here, by the one engine function
(`roofline.from_profile.roofline_for`), from files on this machine.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profiles import paths
from profiles.profile import Profile

from . import sections
from .campaigns import campaigns_section
from .run_timelines import timeline_pictures
from .summary import summary_section
from .tasks import board_markdown
from ..safe_text import clean, markdown_code
from ..store.task_board import TaskBoard
from .. import fmt

SECTION_ORDER = [
    ("summary", "Summary"),   # first: the answer, the crashes and the ceiling in one screen; details after
    ("host", "Host and GPUs"),
    ("configs", "Launch configs"),
    ("runs", "Benchmark runs"),
    ("roofline", "Roofline"),
    ("crashes", "Crashes"),
    ("campaigns", "Campaigns"),
    ("tasks", "Task board"),
]
_BEGIN = re.compile(r"^<!-- gpudeck:begin ([a-z-]+) -->[ \t]*$", re.M)
_END = re.compile(r"^<!-- gpudeck:end ([a-z-]+) -->[ \t]*$", re.M)
LIVE_TIMEOUT_S = 30.0


class ReportError(Exception):
    """The report cannot be written; one line for the operator."""


def default_path(profile_name: str) -> Path:
    return paths.profile_data_dir(profile_name) / "findings.md"


@dataclass
class ReportData:
    profile: Profile
    runs: list[dict[str, Any]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    configs: list[dict[str, Any]] = field(default_factory=list)
    configs_source: str = "launch records in the profile's servers/ folder"
    gpus: dict[str, Any] | None = None
    gpus_note: str | None = None
    roofline: dict[str, Any] | None = None
    roofline_note: str | None = None
    board: TaskBoard | None = None
    suggested: list[str] = field(default_factory=list)   # efficiency suggestions offered


# ---- reading the profile's files ----------------------------------------------

def _entry(name: str, path: Path, mtime: float, doc: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "file": path.name, "path": str(path), "mtime": mtime, "doc": doc,
            "when": time.strftime("%Y-%m-%d %H:%M", time.localtime(mtime))}


def _broken(problem) -> dict[str, Any]:
    return {"name": problem.path.stem, "file": problem.path.name, "mtime": 0.0,
            "error": f"{problem.path.name}: {problem.reason}"}


def _runs(profile_name: str) -> list[dict[str, Any]]:
    """Every run through the store's one reader, oldest first; a broken one kept with its reason."""
    from ..store.runs import read_runs

    scan = read_runs(profile_name)
    broken = sorted((_broken(u) for u in scan.unreadable), key=lambda r: r["name"])
    # oldest first in the store's order (by start time), so "latest" means what it means on the Bench tab
    return broken + [_entry(run.id, run.path, run.mtime, run.raw) for run in reversed(scan.records)]  # the run's one id


def _crashes(profile_name: str) -> list[dict[str, Any]]:
    """Every crash record through the store's one reader, oldest first."""
    from ..store.crashes import read_crashes

    scan = read_crashes(profile_name)
    found = []
    for crash in scan.records:
        path = Path(crash.id + ".json")
        found.append({"name": crash.id, "file": path.name, "mtime": 0.0, "doc": crash.to_doc()})
    found.reverse()
    return [_broken(u) for u in scan.unreadable] + found


def _configs_from_records(profile_name: str) -> list[dict[str, Any]]:
    """The latest launch record of each config (the launch records' one reader): flags and last state."""
    from ..store import launches

    latest = launches.latest_per_config(profile_name)
    return [{"name": name, "script": r.script, "flags": r.flags if isinstance(r.flags, dict) else {},
             "state": r.shown_state} for name, r in sorted(latest.items())]  # as the Server tab shows it


# ---- live parts through the public CLI --------------------------------------

def _cli_json(argv: list[str], timeout: float = LIVE_TIMEOUT_S) -> tuple[dict[str, Any] | None, str | None]:
    """Run `gpudeck ARGV --json`; (document, None) or (None, reason)."""
    try:
        proc = subprocess.run([sys.executable, "-m", "console", *argv], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, f"`gpudeck {argv[0]}` gave no answer within {timeout:.0f} s"
    doc = None
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        return doc, None
    reason = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    return None, reason.removeprefix("gpudeck: ")


def _roofline(profile: Profile, batches: list[int]) -> tuple[dict[str, Any] | None, str | None]:
    """The profile's roofline as a document (the one engine function, in this process), or why not."""
    from ..roofline.from_profile import roofline_for

    if not profile.model.config:
        return None, "the profile names no model config (`[model] config` in the profile)"
    if not profile.gpu.name or not profile.gpu.count:
        return None, "the profile names no GPU model and count (`[gpu] name` and `count`)"
    roof, why = roofline_for(profile, batches or [1])
    if roof is None:
        return None, f"the roofline cannot be computed: {why}"
    return roof.to_json(), None


def run_levels(doc: dict[str, Any]) -> dict[int, float]:
    """A run's measured output tok/s per concurrency, by the store's rules (console.store.measured)."""
    from ..store.measured import measured_levels
    from ..store.runs import LevelResult

    return measured_levels(LevelResult.from_doc(raw) for raw in doc.get("levels") or [] if isinstance(raw, dict))


def compared_entry(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one run the roofline is read against, by the store's rule (console.store.measured: one whole
    run, the newest that measured something); `runs` are the report's entries, oldest first."""
    from ..store.measured import compared_run

    readable = [run for run in reversed(runs) if isinstance(run.get("doc"), dict)]
    return compared_run(readable, measured=lambda run: bool(run_levels(run["doc"])))


def measured_by_concurrency(runs: list[dict[str, Any]]) -> dict[int, tuple[float, str]]:
    """concurrency -> (output tok/s, run name), all from the one compared run."""
    chosen = compared_entry(runs)
    if chosen is None:
        return {}
    return {c: (tok_s, chosen["name"]) for c, tok_s in run_levels(chosen["doc"]).items()}


def collect(profile: Profile, live: bool = True) -> ReportData:
    """Everything the report says, gathered once."""
    data = ReportData(profile=profile)
    data.runs = _runs(profile.name)
    data.crashes = _crashes(profile.name)
    data.configs = _configs_from_records(profile.name)
    data.board = TaskBoard.for_profile(profile.name, readonly=True)
    if live:
        data.gpus, data.gpus_note = _cli_json(["gpus", "--profile", profile.name, "--json"])
        listed, note = _cli_json(["server", "list", "--profile", profile.name, "--json"])
        if listed is not None and isinstance(listed.get("configs"), list):
            recorded = {c["name"]: c for c in data.configs}
            data.configs = []
            for c in listed["configs"]:
                if not isinstance(c, dict):
                    continue
                latest = c.get("latest") if isinstance(c.get("latest"), dict) else {}
                flags = latest.get("flags") or c.get("flags") or recorded.get(c.get("name"), {}).get("flags")
                data.configs.append(c | {"flags": flags or {}, "state": latest.get("shown_state") or latest.get("state")})
            data.configs_source = "the host's launch scripts, with the flags of the latest launch where there was one"
        elif note:
            data.configs_source += f" (the host could not be asked: {note})"
    else:
        data.gpus_note = "written offline"
    batches = sorted({lv.get("concurrency") for run in data.runs for lv in (run.get("doc") or {}).get("levels") or []
                      if isinstance(lv, dict) and isinstance(lv.get("concurrency"), int)
                      and not isinstance(lv.get("concurrency"), bool) and lv["concurrency"] > 0}) or [1]
    data.roofline, data.roofline_note = _roofline(profile, batches)
    return data


# ---- rendering and refreshing ---------------------------------------------------

def render_sections(data: ReportData, out_dir: Path | None = None) -> dict[str, str]:
    """Every section's text; pictures (a campaign's frontier) are written into `out_dir`, beside the document."""
    p = data.profile
    host = {"name": p.name, "target": p.target, "description": p.description,
            "simulated": p.ui.simulated, "gpu_name": p.gpu.name, "gpu_count": p.gpu.count,
            "url": p.server.url, "model_name": p.model.name, "model_config": p.model.config,
            "quant": p.model.quant}
    board = data.board
    if board is None:
        tasks_md = "No task board."
    elif board.error is not None:
        tasks_md = f"The task board file does not parse: {markdown_code(board.error)}. Fix it to see the board here."
    else:
        tasks_md = board_markdown(board.tasks, board.suggestions, heading_level=2).rstrip()
    measured = measured_by_concurrency(data.runs)
    bodies = {
        "summary": summary_section(p, data.crashes, data.roofline, data.roofline_note, measured),
        "host": sections.host_section(host, data.gpus, data.gpus_note),
        "configs": sections.configs_section(data.configs, data.configs_source),
        "runs": sections.runs_section(data.runs, timeline_pictures(data.runs, out_dir)),
        "roofline": sections.roofline_section(data.roofline, data.roofline_note, measured,
                                              compared_entry(data.runs)),
        "crashes": sections.crashes_section(data.crashes),
        "campaigns": campaigns_section(p, out_dir),
        "tasks": tasks_md,
    }
    stamp = fmt.stamp() + time.strftime(" %Z")
    out = {"title": f"# Findings: {p.name}\n\n_Sections between gpudeck markers are rewritten by "
                    f"`gpudeck report`; write your own notes outside them. Last written {stamp}._"}
    for sid, heading in SECTION_ORDER:
        out[sid] = f"## {heading}\n\n{bodies[sid].rstrip()}"
    # crash summaries, config names, server bodies: nothing in the file may act on a terminal that shows it
    return {sid: clean(body) for sid, body in out.items()}


def _block(sid: str, body: str) -> str:
    return f"<!-- gpudeck:begin {sid} -->\n{body.rstrip()}\n<!-- gpudeck:end {sid} -->"


def refresh_document(existing: str | None, rendered: dict[str, str]) -> str:
    """Put the sections into the document: replace marked ones, append the ones it lacks."""
    if not existing or not existing.strip():
        return "\n\n".join(_block(sid, body) for sid, body in rendered.items()) + "\n"
    begins = [(m.group(1), m) for m in _BEGIN.finditer(existing)]
    ends = [(m.group(1), m) for m in _END.finditer(existing)]
    if [b[0] for b in begins] != [e[0] for e in ends] or len(set(b[0] for b in begins)) != len(begins):
        raise ReportError("the file's gpudeck section markers are unpaired or repeated; "
                          "fix or remove them (the file was left as it is)")
    spans = []
    for (sid, b), (_, e) in zip(begins, ends):
        if e.start() < b.end() or (spans and b.start() < spans[-1][2]):
            line = existing.count("\n", 0, b.start()) + 1
            raise ReportError(f"gpudeck section '{sid}' at line {line} is not closed before the next one; "
                              "fix the markers (the file was left as it is)")
        spans.append((sid, b.start(), e.end()))
    pieces: list[str] = []
    cursor = 0
    for sid, start, end in spans:
        pieces.append(existing[cursor:start])
        pieces.append(_block(sid, rendered[sid]) if sid in rendered else existing[start:end])
        cursor = end
    tail = existing[cursor:]
    present = {sid for sid, _, _ in spans}
    missing = [sid for sid in rendered if sid not in present]
    if not spans:
        # The operator's own file: the generated sections go after their text.
        added = "\n\n".join(_block(sid, rendered[sid]) for sid in missing)
        return existing.rstrip("\n") + "\n\n" + added + "\n"
    order = list(rendered)
    before: dict[str, list[str]] = {}   # a new section goes before the next one the file has (the summary
    late = []                           # added to an older report sits under its title, not at its end)
    for sid in missing:
        follower = next((s for s in order[order.index(sid) + 1:] if s in present), None)
        if follower is None:
            late.append(sid)
        else:
            before.setdefault(follower, []).append(sid)
    if before:
        pieces = []
        cursor = 0
        for sid, start, end in spans:
            pieces.append(existing[cursor:start])
            pieces.extend(_block(new, rendered[new]) + "\n\n" for new in before.get(sid, []))
            pieces.append(_block(sid, rendered[sid]) if sid in rendered else existing[start:end])
            cursor = end
    if late:
        added = "\n\n".join(_block(sid, rendered[sid]) for sid in late)
        pieces.append("\n\n" + added)
    pieces.append(tail)
    text = "".join(pieces)
    return text if text.endswith("\n") else text + "\n"


def offer_efficiency_suggestions(profile: Profile, data: ReportData) -> list[str]:
    """Runs with levels below the board's efficiency threshold become suggestions (never tasks):
    one per run, naming its worst level, so a report never multiplies them.

    The run looked at is the one the Roofline section reads (the store's rule, `compared_entry`),
    judged over all its own levels, as when it was saved (offer_run_efficiency); a campaign's cell
    run is left to the campaign's result table, as it is when saved."""
    if data.roofline is None or data.board is None or data.board.error is not None:
        return []
    ideal = _ideal_by_batch(data.roofline)
    run = compared_entry(data.runs)
    if run is None or run["name"] in _campaign_runs(profile.name):
        return []
    levels = sorted(run_levels(run["doc"]).items())
    text = _offer_worst(profile, run["name"], [(b, sections.efficiency_pct(t, ideal.get(b))) for b, t in levels])
    return [text] if text else []


def _campaign_runs(profile_name: str) -> set[str]:
    """Run ids of campaign cells (each campaign judges its own cells)."""
    from ..store import campaigns as campaign_state

    states = campaign_state.read_campaigns(profile_name).records
    return {c.run_id for state in states for c in state.cells if c.run_id}


def offer_run_efficiency(profile: Profile, run_name: str, doc: dict[str, Any]) -> str | None:
    """Judge a run's efficiency once, when it is saved: at most one suggestion, for its worst level."""
    levels = run_levels(doc)
    if not levels:
        return None
    roof, _ = _roofline(profile, sorted(levels))
    if roof is None:
        return None
    ideal = _ideal_by_batch(roof)
    return _offer_worst(profile, run_name, [(b, sections.efficiency_pct(t, ideal.get(b))) for b, t in levels.items()])


def _ideal_by_batch(roof: dict[str, Any]) -> dict[Any, Any]:
    return {lv.get("batch"): lv.get("tok_s_ideal") for lv in roof.get("levels") or [] if isinstance(lv, dict)}


def _offer_worst(profile: Profile, run: str, levels: list[tuple[int, float | None]]) -> str | None:
    from ..store.suggest import suggest_from_efficiency

    known = [(b, pct) for b, pct in levels if pct is not None]
    if not known:
        return None
    threshold = TaskBoard.for_profile(profile.name, readonly=True).threshold_pct
    below = [x for x in known if threshold is not None and x[1] < threshold]
    batch, worst = min(known, key=lambda x: x[1])
    label = f"concurrency {batch} of {run} ({len(below)} of {len(known)} levels below)"
    s = suggest_from_efficiency(profile, label, worst, run=run, key=f"efficiency:{run}")
    return s.text if s is not None else None


def write_report(profile: Profile, out: Path | None = None, live: bool = True,
                 offer_suggestions: bool = True) -> tuple[Path, ReportData]:
    """Write (or refresh) the findings document; returns its path and what it said.

    With offer_suggestions, levels whose efficiency is below the operator's threshold
    are offered on the task board as suggestions (listed in `data.suggested`).
    """
    from profiles.atomic import write_atomic

    target = Path(out) if out else default_path(profile.name)
    try:
        existing = target.read_text(encoding="utf-8") if target.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"cannot read {target}: {exc}") from None
    data = collect(profile, live=live)
    text = refresh_document(existing, render_sections(data, target.parent))
    try:
        write_atomic(target, text, mode=0o644)
    except OSError as exc:
        raise ReportError(f"cannot write {target}: {exc.strerror or exc}") from None
    if offer_suggestions:
        data.suggested = offer_efficiency_suggestions(profile, data)
    return target, data
