"""The findings report's sections, each drawn from plain data into Markdown.

Nothing here reads files or talks to hosts: report/document.py gathers the
data, these functions only write it down. Unknown values print as N/A.
"""
from __future__ import annotations

import math
import re
from typing import Any, Iterable

from ..fmt import UNKNOWN as NA
from ..safe_text import markdown_code, markdown_text
from ..store.runs import CONFIG_UNKNOWN, measured_config


def num(value: Any, digits: int = 1) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return NA
    return f"{value:,.{digits}f}"


def cell(value: Any) -> str:
    """Data in the document (a table cell, a fact in a line): one line, nothing in it read as markup
    or HTML. Text from outside (a model name /v1/models gave, a log line) is escaped here, once."""
    if value is None:
        return NA
    return markdown_text(str(value))


def code(value: Any) -> str:
    """A path or name from the data as a code span that its own backticks cannot close."""
    return markdown_code(str(value))


def fenced(lines: Iterable[str]) -> str:
    """A code block whose fence cannot be closed by the text inside it."""
    lines = [str(line) for line in lines]
    longest = max((len(m) for line in lines for m in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence, *lines, fence])


def table(headers: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |",
           "| " + " | ".join("---" for _ in headers) + " |"]
    out.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(out)


# ---- host and GPUs --------------------------------------------------------

def host_section(profile: dict[str, Any], gpus: dict[str, Any] | None, gpus_note: str | None) -> str:
    out = [f"- Profile: {code(profile['name'])} ({cell(profile.get('target'))})"]
    if profile.get("description"):
        out.append(f"- Description: {cell(profile['description'])}")
    if profile.get("simulated"):
        out.append("- **SIMULATED**: every figure from this host comes from the simulator")
    gpu_name, gpu_count = profile.get("gpu_name"), profile.get("gpu_count")
    out.append(f"- GPUs in the profile: {gpu_count if gpu_count is not None else NA} × {gpu_name or NA}")
    if gpu_count is None and gpu_name is None:
        out.append("  (set `[gpu] name` and `count` in the profile for the roofline)")
    out.append(f"- Server endpoint: {cell(profile.get('url'))}")
    out.append(f"- Model: {cell(profile.get('model_name'))} · config {cell(profile.get('model_config'))}"
               f" · quant {cell(profile.get('quant'))}")
    out.append("")
    if gpus is None:
        out.append(f"No live GPU snapshot: {cell(gpus_note or 'not requested')}.")
        return "\n".join(out)
    state = gpus.get("state")
    if state != "ok":
        out.append(f"GPU snapshot: **{cell(state)}** — {cell(gpus.get('message'))}")
        return "\n".join(out)
    rows = []
    for g in gpus.get("gpus") or []:
        if not isinstance(g, dict):
            continue
        used, total = g.get("memory_used_mib"), g.get("memory_total_mib")
        rows.append([cell(g.get("index")), cell(g.get("name")), f"{num(g.get('utilization_gpu_pct'), 0)}%",
                     f"{num(_gib(used))} / {num(_gib(total))} GiB", f"{num(g.get('temperature_c'), 0)} °C",
                     f"{num(g.get('power_draw_w'), 0)} / {num(g.get('power_limit_w'), 0)} W",
                     cell(g.get("pstate")), cell(", ".join(g.get("flags") or []) or "–")])
    out.append(f"GPU snapshot ({len(rows)} GPUs):\n")
    out.append(table(["GPU", "name", "util", "memory", "temp", "power", "P", "flags"], rows))
    return "\n".join(out)


def _gib(mib: Any) -> float | None:
    return mib / 1024 if isinstance(mib, (int, float)) and not isinstance(mib, bool) else None


# ---- launch configs -------------------------------------------------------

def configs_section(configs: list[dict[str, Any]], source: str) -> str:
    if not configs:
        return ("No launch configs known yet (name them in the profile's `[server]` section, "
                "or launch one with `gpudeck server launch`).")
    out = [f"Source: {cell(source)}.", ""]
    for c in configs:
        out.append(f"### {cell(c.get('name'))}\n")
        if c.get("script"):
            out.append(f"Script: {code(c['script'])}")
        if c.get("state"):
            out.append(f"Last state: {cell(c['state'])}")
        for warning in c.get("warnings") or []:
            out.append(f"- ⚠ {cell(warning)}")
        if c.get("error"):
            out.append(f"- ✖ {cell(c['error'])}")
        flags = c.get("flags") or {}
        if flags:
            out.append("")
            out.append(table(["flag", "script value"],
                             [[cell(k), cell(_flag_value(v))] for k, v in flags.items()]))
        else:
            out.append("\nNo script flags recorded.")
        out.append("")
    return "\n".join(out).rstrip()


def _flag_value(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


# ---- benchmark runs -------------------------------------------------------

def _pct(stats: Any, key: str) -> Any:
    return stats.get(key) if isinstance(stats, dict) else None


def run_table(levels: list[dict[str, Any]]) -> str:
    rows = []
    for level in levels:
        if not isinstance(level, dict):
            continue
        ttft, tpot = level.get("ttft_ms"), level.get("tpot_ms")
        done, failed = level.get("completed"), level.get("failed")
        rows.append([cell(level.get("concurrency")), cell(level.get("status")),
                     NA if done is None and failed is None else f"{cell(done)}/{cell(failed)}", num(level.get("output_throughput"), 2),
                     f"{num(_pct(ttft, 'median'))} / {num(_pct(ttft, 'p99'))}",
                     f"{num(_pct(tpot, 'median'), 2)} / {num(_pct(tpot, 'p99'), 2)}"])
    return table(["concurrency", "status", "done/failed", "output tok/s", "TTFT p50 / p99 ms",
                  "TPOT p50 / p99 ms"], rows)


def runs_section(runs: list[dict[str, Any]], pictures: dict[str, str] | None = None) -> str:
    """runs: [{"name", "when", "doc"} or {"name", "error"}], oldest first; `pictures`: run name -> the
    markdown of its timeline picture (console.report.run_timelines), shown under its table."""
    if not runs:
        return "No benchmark runs yet (`gpudeck bench --url ... --concurrency 1,2,10,64`)."
    out: list[str] = []
    for run in runs:
        out.append(f"### {cell(run['name'])}\n")
        if run.get("error"):
            out.append(f"Not readable: {cell(run['error'])}\n")
            continue
        doc = run["doc"]
        facts = [f"model {cell(doc.get('model'))}", f"endpoint {cell(doc.get('url'))}"]
        if run.get("when"):
            facts.append(f"saved {run['when']}")
        workload = doc.get("workload")
        if isinstance(workload, dict):
            for key in ("input_len", "output_len", "api"):
                if key in workload:
                    facts.append(f"{key.replace('_', ' ')} {cell(workload[key])}")
        config = doc.get("config") or doc.get("launch_config")
        if isinstance(config, dict) and config.get("name"):
            facts.append(f"launch config {cell(config['name'])}")
        elif isinstance(config, str):
            facts.append(f"launch config {cell(config)}")
        out.append(" · ".join(facts) + "\n")
        levels = doc.get("levels")
        if isinstance(levels, list) and levels:
            out.append(run_table(levels))
        else:
            out.append("No levels recorded.")
        if (pictures or {}).get(run["name"]):
            out.append("\n" + (pictures or {})[run["name"]])
        out.append("")
    return "\n".join(out).rstrip()


# ---- roofline -------------------------------------------------------------

def roofline_section(roof: dict[str, Any] | None, note: str | None,
                     measured: dict[int, tuple[float, str]], compared: dict[str, Any] | None = None) -> str:
    """measured: concurrency -> (output tok/s, run name), all from the one run the store's rule compares
    (console.store.measured), `compared` that run's report entry: named first, with what it measured."""
    if roof is None:
        return f"Roofline skipped: {cell(note)}."
    out: list[str] = []
    if note:
        out.append(cell(note) + "\n")
    doc = (compared or {}).get("doc") if isinstance((compared or {}).get("doc"), dict) else None
    if doc is not None:
        config = measured_config(doc)
        out.append(f"- Measured: run {cell(compared['name'])} (the newest run that measured), "
                   f"{'config ' + cell(config) if config else CONFIG_UNKNOWN}, started "
                   f"{cell(doc.get('started'))}, server {cell(doc.get('url'))}, model {cell(doc.get('model'))}, "
                   f"status {cell(doc.get('status'))}")
    model = roof.get("model") if isinstance(roof.get("model"), dict) else {}
    ideal = roof.get("ideal") if isinstance(roof.get("ideal"), dict) else {}
    real = roof.get("realistic") if isinstance(roof.get("realistic"), dict) else {}
    out.append(f"- Model: {cell(model.get('name'))} · {num(_billions(model.get('total_params')))}B total, "
               f"{num(_billions(model.get('active_params')))}B active per token")
    out.append(f"- Single stream: ideal {num(ideal.get('single_stream_tok_s'))} tok/s, "
               f"realistic {num(real.get('single_stream_tok_s'))} tok/s")
    rows = []
    for level in roof.get("levels") or []:
        if not isinstance(level, dict):
            continue
        batch = level.get("batch")
        got = measured.get(batch) if isinstance(batch, int) else None
        tok_ideal, tok_real = level.get("tok_s_ideal"), level.get("tok_s_realistic")
        rows.append([cell(batch), num(tok_ideal), num(tok_real),
                     num(got[0], 2) if got else NA,
                     _efficiency(got[0] if got else None, tok_ideal),
                     _efficiency(got[0] if got else None, tok_real),
                     cell(level.get("bound")), cell(got[1]) if got else NA])
    out.append("")
    out.append(table(["batch", "ideal tok/s", "realistic tok/s", "measured tok/s", "efficiency (ideal)",
                      "efficiency (realistic)", "bound", "run"], rows))
    warnings = roof.get("warnings")
    if isinstance(warnings, list) and warnings:   # defaulted inputs and checkpoint disagreements: never silent
        out.append("\nWarnings:\n")
        out.extend(f"- {cell(w)}" for w in warnings)
    assumptions = roof.get("assumptions")
    if isinstance(assumptions, dict) and assumptions:
        out.append("\nAssumptions:\n")
        out.extend(f"- {cell(k)}: {cell(v)}" for k, v in assumptions.items())
    return "\n".join(out)


def efficiency_pct(measured: Any, theoretical: Any) -> float | None:
    m, t = num(measured), num(theoretical)
    if m == NA or t == NA or not theoretical:
        return None
    return 100.0 * measured / theoretical


def _efficiency(measured: Any, theoretical: Any) -> str:
    value = efficiency_pct(measured, theoretical)
    return NA if value is None else f"{value:.1f}%"


def _billions(count: Any) -> float | None:
    return count / 1e9 if isinstance(count, (int, float)) and not isinstance(count, bool) else None


# ---- crashes --------------------------------------------------------------

def crashes_section(crashes: list[dict[str, Any]]) -> str:
    """crashes: [{"name", "doc"} or {"name", "error"}], oldest first."""
    if not crashes:
        return "No crashes recorded."
    out: list[str] = []
    for crash in crashes:
        if crash.get("error"):
            out.append(f"### {cell(crash['name'])}\n\nNot readable: {cell(crash['error'])}\n")
            continue
        doc = crash["doc"]
        out.append(f"### {cell(doc.get('time'))} · {cell(doc.get('config'))} · {cell(doc.get('class'))}\n")
        out.append(f"- Class: **{cell(doc.get('class'))}**")
        out.append(f"- Exit status: {cell(doc.get('exit_status'))} · decisive log line: {cell(doc.get('line'))}")
        if doc.get("summary"):
            out.append(f"- Summary: {cell(doc['summary'])}")
        if doc.get("sweep"):
            out.append(f"- During sweep: {cell(doc['sweep'])}")
        if doc.get("log"):
            out.append(f"- Log: {code(doc['log'])}")
        out.append(f"- Record: {code(crash['name'])}")
        excerpt = doc.get("excerpt")
        if isinstance(excerpt, list) and excerpt:
            out.append("")
            out.append(fenced(excerpt))
        out.append("")
    return "\n".join(out).rstrip()
