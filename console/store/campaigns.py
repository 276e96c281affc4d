"""A campaign on disk: its cells and their states, saved after every step.

    <profile data>/campaigns/<id>/state.json     the spec, every cell, the campaign's status
    <profile data>/campaigns/<id>/scripts/       each derived script, exactly as it ran
    <profile data>/campaigns/<id>/driver.log     what the detached runner printed

A reboot or a `kill -9` loses nothing that finished: `resume` reads state.json,
keeps every finished cell, and redoes the one that was in progress.

state.json is hostile input like any other file: `read_state` is its one
reader. It reads only a regular file under a size cap, checks every field's
type, turns numbers outside a metric's physical range into None (shown N/A),
caps notes, and refuses anything else with one line naming the file. Ids and
cell names become paths only through `campaign_dir` and `script_file`, which
check the grammar and that the result lies inside its folder.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from profiles import paths
from profiles.atomic import private_dirs, write_atomic

from .. import limits
from ..bench import limits as load_limits
from .files import FileRefused, read_capped
from .scan import Scan, scan_files

KIND = "campaign state"

# A cell moves queued -> launching -> waiting -> sweeping -> stopping -> done;
# it ends instead as start-failed, crashed, interrupted or skipped.
IN_PROGRESS = ("launching", "waiting", "sweeping", "stopping")
FINISHED = ("done", "crashed", "start-failed", "skipped", "interrupted")
CELL_STATES = ("queued", *IN_PROGRESS, *FINISHED)
CAMPAIGN_STATES = ("running", "finished", "stopped", "failed")

# What `new_id` makes (campaign-20261201-154812-1), and any other plain name: never a path.
CAMPAIGN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
TOKEN = re.compile(r"[0-9a-f]{32}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


class StateRefused(ValueError):
    """A campaign's state file (or id) is not what gpudeck writes; one line naming it."""


class PathRefused(ValueError):
    """A path built from a name would land outside its folder."""


@dataclass
class Cell:
    name: str
    base: str                          # the launch config it comes from
    flags: dict[str, Any] = field(default_factory=dict)   # grid values ({} for a plain [[config]])
    status: str = "queued"
    attempts: int = 0
    script: str | None = None          # the script's path on the host
    launch_id: str | None = None
    run_id: str | None = None
    crash_class: str | None = None
    crash_record: str | None = None
    note: str = ""
    levels: list[dict[str, Any]] = field(default_factory=list)   # one summary per level, as the sweep reported it
    live: dict[str, Any] | None = None           # the running level: concurrency, second, tok/s of the last second
    rounds: list[dict[str, Any]] = field(default_factory=list)   # each finished visit: its levels, run, conditions, time
    pruned: str = ""                   # why repeats stopped early (clearly behind the leader)
    started_at: float | None = None
    ended_at: float | None = None
    node: str | None = None            # the node(s) it ran on (a Slurm job), so node effects show

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CampaignState:
    id: str
    profile: str
    spec: dict[str, Any]
    cells: list[Cell]
    status: str = "running"
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    driver_pid: int | None = None
    driver_host: str | None = None
    driver_start: int | None = None    # the driver's start time (clock ticks after boot, /proc/PID/stat)
    driver_token: str | None = None    # the secret in the driver's environment, written at spawn
    note: str = ""
    lanes: int | None = None           # cells at once (Slurm jobs or hosts), as the driver began it

    @property
    def dir(self) -> Path:
        return campaign_dir(self.profile, self.id)

    def cell(self, name: str) -> Cell | None:
        return next((c for c in self.cells if c.name == name), None)

    @property
    def finished_cells(self) -> int:
        """How many cells have ended, however (the count `campaign list` and the Campaign tab show)."""
        return sum(1 for c in self.cells if c.status in FINISHED)

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["cells"] = [c.to_json() for c in self.cells]
        return doc


# ---------------------------------------------------------------- paths

def check_id(campaign_id: Any) -> str:
    """A campaign id as `new_id` makes them; anything else (`../x`, `/x`, a newline) is refused."""
    if not isinstance(campaign_id, str) or not CAMPAIGN_ID.fullmatch(campaign_id):
        shown = repr(campaign_id)[:80]
        raise StateRefused(f"bad campaign id {shown}: expected a name like campaign-20261201-154812")
    return campaign_id


def inside(path: Path, folder: Path) -> Path:
    """`path`, once every link and `..` is resolved, lies inside `folder` (resolved too); else PathRefused."""
    real_folder = os.path.realpath(folder)
    real = os.path.realpath(path)
    if os.path.commonpath([real_folder, real]) != real_folder or real == real_folder:
        raise PathRefused(f"{path}: outside {folder}")
    return Path(path)


def file_stem(name: str) -> str:
    """A cell's name as a file name: the readable part kept, anything else `_`, never hidden or too long."""
    stem = re.sub(r"[^A-Za-z0-9._+=-]+", "_", name).strip("_") or "cell"
    if stem.startswith("."):
        stem = "_" + stem
    if len(stem) > 150 or stem != name:    # changed: a digest keeps two names from meeting in one file
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        stem = f"{stem[:138]}-{digest}"
    return stem


def campaigns_dir(profile: str) -> Path:
    return paths.profile_data_dir(profile) / "campaigns"


def campaign_file(profile: str) -> Path:
    """The campaign kept with the profile: what `campaign run` and the Campaign tab start by default."""
    return paths.profile_data_dir(profile) / "campaign.toml"


def campaign_dir(profile: str, campaign_id: str) -> Path:
    """The campaign's folder; its id is checked first, so the folder is always one level under campaigns/."""
    base = campaigns_dir(profile)
    return base / check_id(campaign_id)


def script_file(state: CampaignState, cell_name: str) -> Path:
    """Where a grid cell's derived script is kept, checked to lie in the campaign's scripts folder."""
    folder = state.dir / "scripts"
    return inside(folder / f"{file_stem(cell_name)}.sh", folder)


def new_id(profile: str, now: float | None = None) -> str:
    """campaign-YYYYmmdd-HHMMSS, with a suffix when that directory exists (made with O_EXCL semantics)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    base = campaigns_dir(profile)
    private_dirs(base)
    for n in range(1000):
        cid = f"campaign-{stamp}" + (f"-{n}" if n else "")
        try:
            (base / cid).mkdir(mode=0o700)
            return cid
        except FileExistsError:
            continue
    raise OSError(f"cannot create a campaign directory under {base}")


def save(state: CampaignState) -> None:
    folder = inside(state.dir, campaigns_dir(state.profile))
    write_atomic(folder / "state.json", json.dumps(state.to_json(), indent=1) + "\n", mode=0o600)


# ---------------------------------------------------------------- the one reader

def _cut(text: str, cap: int = limits.MAX_NOTE_CHARS) -> str:
    return text if len(text) <= cap else text[:cap - 1] + "…"


def _text(doc: dict[str, Any], key: str, where: str, optional: bool = True, cap: int = 4096) -> str | None:
    value = doc.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise StateRefused(f"{where}.{key}: expected text, got {type(value).__name__}")
    if len(value) > cap:
        raise StateRefused(f"{where}.{key}: {len(value)} characters, more than {cap}")
    return value


def _required_text(doc: dict[str, Any], key: str, where: str, cap: int = 4096) -> str:
    value = _text(doc, key, where, optional=False, cap=cap)
    return value if value is not None else ""   # never None: _text refuses a missing key


def _note(doc: dict[str, Any], key: str, where: str) -> str:
    value = doc.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise StateRefused(f"{where}.{key}: expected text, got {type(value).__name__}")
    return _cut(value)


def _int(doc: dict[str, Any], key: str, where: str, lo: int = 0, hi: int = 1 << 62) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise StateRefused(f"{where}.{key}: expected a whole number from {lo} to {hi}, got {str(value)[:40]}")
    return value


def _time(doc: dict[str, Any], key: str, where: str) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise StateRefused(f"{where}.{key}: expected a time in seconds, got {str(value)[:40]}")
    return float(value)


def metric(value: Any, hi: float, whole: bool = False) -> float | int | None:
    """A measured figure within its physical range, else None (shown N/A, never a 309-digit number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0 or value > hi:
        return None
    if whole:
        return int(value) if float(value).is_integer() else None
    return value


# The physical ranges: a level's throughput, latencies and counts.
_TOK_S = 1e8            # output tokens per second, a whole cluster's worth and more
_MS = 1e9               # a latency in milliseconds (11 days)
_COUNT = 1e12


def clean_level(row: Any, where: str = "level") -> dict[str, Any]:
    """One level's row, with every number in range or None; a row that is not a table is refused."""
    if not isinstance(row, dict):
        raise StateRefused(f"{where}: expected a table, got {type(row).__name__}")
    out = dict(row)
    conc = metric(row.get("concurrency"), load_limits.MAX_CONCURRENCY, whole=True)
    out["concurrency"] = conc if conc else None
    status = row.get("status")
    out["status"] = status if isinstance(status, str) and len(status) <= 40 else ("unknown" if status else None)
    for key in ("completed", "failed"):
        out[key] = metric(row.get(key), _COUNT, whole=True)
    for key in ("output_throughput", "goodput"):
        if key in row:
            out[key] = metric(row.get(key), _TOK_S)
    for key in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99"):
        if key in row:
            out[key] = metric(row.get(key), _MS)
    note = row.get("note")
    out["note"] = _cut(note, 300) if isinstance(note, str) else ""
    if "samples" in row:
        out["samples"] = _clean_samples(row.get("samples"))
    return out


_SAMPLE_KEYS = {"ttft_ms": _MS, "tpot_ms": _MS, "e2el_ms": _MS, "tokens": _COUNT}
_SAMPLES_KEPT = 1024    # per key: far above what a level keeps (console.campaign.stats.SAMPLE_CAP)


def _clean_samples(samples: Any) -> dict[str, Any]:
    """Per-request samples: known keys only, each a bounded list of numbers in range (others dropped)."""
    if not isinstance(samples, dict):
        return {}
    out = {}
    for key, hi in _SAMPLE_KEYS.items():
        values = samples.get(key)
        if isinstance(values, list):
            out[key] = [v for v in (metric(x, hi) for x in values[:_SAMPLES_KEPT]) if v is not None]
    return out


def _round(doc: Any, where: str) -> dict[str, Any]:
    """One finished visit of a cell (a repeat): its levels, run, host conditions and times."""
    if not isinstance(doc, dict):
        raise StateRefused(f"{where}: expected a table, got {type(doc).__name__}")
    levels = doc.get("levels") or []
    if not isinstance(levels, list) or len(levels) > 10 * load_limits.MAX_LEVELS:
        raise StateRefused(f"{where}.levels: expected a list of at most {10 * load_limits.MAX_LEVELS} levels")
    conditions = doc.get("conditions")
    if not isinstance(conditions, dict):
        conditions = {}
    return {"levels": [clean_level(row, f"{where}.levels[{i}]") for i, row in enumerate(levels)],
            "run_id": _text(doc, "run_id", where, cap=200),
            "conditions": {str(k)[:40]: v for k, v in list(conditions.items())[:32]
                           if isinstance(v, (int, float, str)) and not isinstance(v, bool)
                           and (not isinstance(v, str) or len(v) <= 200)
                           and (not isinstance(v, float) or math.isfinite(v))},
            "started_at": _time(doc, "started_at", where), "ended_at": _time(doc, "ended_at", where),
            "elapsed_s": metric(doc.get("elapsed_s"), 1e9), "sweep_s": metric(doc.get("sweep_s"), 1e9),
            # what ended the cell's repeats (console.campaign.until_sure), on its last round
            "ended_by": _text(doc, "ended_by", where, cap=40), "ended_why": _text(doc, "ended_why", where, cap=400),
            "slo_search": _slo_search(doc.get("slo_search"))}


def _slo_search(doc: Any) -> dict[str, Any] | None:
    """A visit's highest load under the SLO (console.campaign.slo_search): whole levels in range, short probes."""
    if not isinstance(doc, dict):
        return None

    def level(value: Any) -> int | None:
        found = metric(value, load_limits.MAX_CONCURRENCY, whole=True)
        return int(found) if found else None

    found = doc.get("probes")
    probes: list[Any] = found if isinstance(found, list) else []
    return {"max_ok": level(doc.get("max_ok")), "first_fail": level(doc.get("first_fail")),
            "capped": doc.get("capped") is True,
            "probes": [{"concurrency": level(p.get("concurrency")), "holds": p.get("holds") is True,
                        "why": _cut(why, 200) if isinstance(why := p.get("why"), str) else ""}
                       for p in probes[:64] if isinstance(p, dict)]}


def _clean_live(live: Any, where: str) -> dict[str, Any] | None:
    if live is None:
        return None
    if not isinstance(live, dict):
        raise StateRefused(f"{where}.live: expected a table, got {type(live).__name__}")
    conc = metric(live.get("concurrency"), load_limits.MAX_CONCURRENCY, whole=True)
    return {"concurrency": conc if conc else None, "second": metric(live.get("second"), _MS),
            "tok_s": metric(live.get("tok_s"), _TOK_S), "completed": metric(live.get("completed"), _COUNT, True),
            "failed": metric(live.get("failed"), _COUNT, True)}


def _cell(doc: Any, where: str) -> Cell:
    if not isinstance(doc, dict):
        raise StateRefused(f"{where}: expected a table, got {type(doc).__name__}")
    name = _required_text(doc, "name", where, cap=1000)
    base = _required_text(doc, "base", where, cap=1000)
    if _CONTROL.search(name) or _CONTROL.search(base) or not name:   # names a campaign file could never give
        raise StateRefused(f"{where}.name: not a cell name gpudeck writes")
    flags = doc.get("flags") or {}
    if not isinstance(flags, dict) or len(flags) > limits.MAX_GRID_FLAGS or not all(
            isinstance(k, str) and len(k) <= 100 and isinstance(v, (int, float, str)) and not isinstance(v, bool)
            and (not isinstance(v, str) or len(v) <= 1000) for k, v in flags.items()):
        raise StateRefused(f"{where}.flags: expected a table of flag = number or text")
    status = doc.get("status", "queued")
    if status not in CELL_STATES:
        raise StateRefused(f"{where}.status: expected one of {', '.join(CELL_STATES)}, got {str(status)[:40]!r}")
    levels = doc.get("levels") or []
    if not isinstance(levels, list):
        raise StateRefused(f"{where}.levels: expected a list of levels, got {type(levels).__name__}")
    if len(levels) > 10 * load_limits.MAX_LEVELS:
        raise StateRefused(f"{where}.levels: {len(levels)} levels, more than {10 * load_limits.MAX_LEVELS}")
    return Cell(name=name, base=base, flags=dict(flags), status=status,
                attempts=_int(doc, "attempts", where, 0, 1_000_000) or 0,
                script=_text(doc, "script", where), launch_id=_text(doc, "launch_id", where, cap=200),
                run_id=_text(doc, "run_id", where, cap=200), crash_class=_text(doc, "crash_class", where, cap=200),
                crash_record=_text(doc, "crash_record", where, cap=200), note=_note(doc, "note", where),
                levels=[clean_level(row, f"{where}.levels[{i}]") for i, row in enumerate(levels)],
                live=_clean_live(doc.get("live"), where),
                started_at=_time(doc, "started_at", where), ended_at=_time(doc, "ended_at", where),
                node=_text(doc, "node", where, cap=1000), pruned=_note(doc, "pruned", where) or "",
                rounds=[_round(r, f"{where}.rounds[{i}]") for i, r in enumerate(_rounds(doc, where))])


def _rounds(doc: dict[str, Any], where: str) -> list[dict[str, Any]]:
    rounds = doc.get("rounds") or []
    if not isinstance(rounds, list) or len(rounds) > 50:
        raise StateRefused(f"{where}.rounds: expected a list of at most 50 repeats")
    return rounds


def state_from_doc(doc: Any, campaign_id: str, profile: str) -> CampaignState:
    """A CampaignState from a parsed state.json, every field checked; StateRefused says which is wrong."""
    from ..campaign.spec import CampaignError, from_dict

    if not isinstance(doc, dict):
        raise StateRefused(f"expected a table, got {type(doc).__name__}")
    if doc.get("id") != campaign_id:
        raise StateRefused(f"id {str(doc.get('id'))[:80]!r} is not its folder's name {campaign_id!r}")
    if doc.get("profile") != profile:
        raise StateRefused(f"profile {str(doc.get('profile'))[:80]!r} is not {profile!r}")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise StateRefused(f"spec: expected a table, got {type(spec).__name__}")
    if spec:
        try:
            from_dict(spec, "spec")
        except CampaignError as exc:
            raise StateRefused(str(exc)) from None
    status = doc.get("status", "running")
    if status not in CAMPAIGN_STATES:
        raise StateRefused(f"status: expected one of {', '.join(CAMPAIGN_STATES)}, got {str(status)[:40]!r}")
    cells = doc.get("cells")
    if not isinstance(cells, list):
        raise StateRefused(f"cells: expected a list, got {type(cells).__name__}")
    if len(cells) > limits.MAX_CELLS_CEILING:
        raise StateRefused(f"cells: {len(cells)} cells, more than {limits.MAX_CELLS_CEILING}")
    token = doc.get("driver_token")
    if token is not None and not (isinstance(token, str) and TOKEN.fullmatch(token)):
        raise StateRefused("driver_token: not a token gpudeck writes")
    now = time.time()
    return CampaignState(
        id=campaign_id, profile=profile, spec=spec, status=status,
        cells=[_cell(c, f"cells[{i}]") for i, c in enumerate(cells)],
        created_at=_time(doc, "created_at", "state") or now, updated_at=_time(doc, "updated_at", "state") or now,
        finished_at=_time(doc, "finished_at", "state"),
        driver_pid=_int(doc, "driver_pid", "state", 1, 1 << 31), driver_host=_text(doc, "driver_host", "state", cap=255),
        driver_start=_int(doc, "driver_start", "state", 0), driver_token=token, note=_note(doc, "note", "state"),
        lanes=_int(doc, "lanes", "state", 1, 1024))


def _state_at(path: Path, campaign_id: str, profile: str) -> CampaignState:
    """state.json read and checked; FileRefused or StateRefused carry the bare reason."""
    raw = read_capped(path, limits.MAX_STATE_FILE_BYTES)
    try:
        return state_from_doc(json.loads(raw.decode("utf-8")), campaign_id, profile)
    except StateRefused:
        raise
    except (UnicodeDecodeError, ValueError) as exc:
        raise StateRefused(f"not JSON: {str(exc)[:120]}") from None


def read_state(path: Path, campaign_id: str, profile: str) -> CampaignState:
    """The one reader of state.json: FileNotFoundError when there is none, StateRefused (one line) when bad."""
    try:
        return _state_at(path, campaign_id, profile)
    except FileRefused as exc:
        raise StateRefused(f"{path}: unreadable {KIND} ({str(exc).removeprefix(str(path) + ': ')})") from None
    except StateRefused as exc:
        raise StateRefused(f"{path}: unreadable {KIND} ({exc})") from None
    except RecursionError:
        raise StateRefused(f"{path}: unreadable {KIND} (nested too deep)") from None


def load(profile: str, campaign_id: str) -> CampaignState:
    """One campaign by id: LookupError when there is none, StateRefused (one line) for a bad id or file."""
    folder = campaign_dir(profile, campaign_id)
    path = folder / "state.json"
    try:
        inside(path, campaigns_dir(profile))
        return read_state(path, campaign_id, profile)
    except FileNotFoundError:
        raise LookupError(f"no campaign {campaign_id!r} in profile {profile!r}") from None
    except PathRefused as exc:
        raise StateRefused(f"{path}: unreadable {KIND} ({exc})") from None


def read_campaigns(profile: str) -> Scan[CampaignState]:
    """The one reader of every campaign: those that read, and one `Unreadable` line per one that does not."""
    try:
        entries = sorted(campaigns_dir(profile).iterdir())
    except OSError:
        return Scan()

    def read(path: Path) -> CampaignState:
        if not CAMPAIGN_ID.fullmatch(path.parent.name):
            raise StateRefused("its folder's name is not a campaign id")
        return _state_at(path, path.parent.name, profile)

    return scan_files([entry / "state.json" for entry in entries
                       if entry.is_dir() and not entry.is_symlink() and os.path.lexists(entry / "state.json")],
                      KIND, read)
