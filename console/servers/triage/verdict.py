"""From what the last run of the server showed to a verdict: a lifecycle state and a class.

`healthy` is earned: the run reached ready or served requests and nothing
fatal, no ERROR line and no burst of HTTP 500s came after. A log that
proves nothing (it stops mid-load, shows only startup lines, or nothing
known) is `unknown`.

The root cause is chosen by kind first, then by time:
  * a cause (illegal address, OOM, NCCL, bind failure, model load, hang)
    found in the run, or derived from a traceback (the exception's type, or
    the function of its deepest frame);
  * a kill (SIGKILL, OOM killer, exit 137) only when no cause came before
    it: a kill after watchdog timeouts is the end of a hang;
  * the engine dying, which is what a root cause looks like from outside;
  * the final exception of the last traceback;
  * a burst of HTTP 500s after ready.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .rules import CRASH_CLASSES, RuleSet
from .scan import Episode, Hit

EXCERPT_WIDTH = 400
HTTP500_BURST = 3
CAUSES = frozenset({"cuda-illegal-address", "cuda-oom", "nccl", "port-in-use", "model-load", "hang"})


@dataclass
class TriageResult:
    """The verdict on a log; `to_json()` is the stable CLI/JSON form."""

    cls: str
    line: int | None
    summary: str
    excerpt: list[str]
    server: str
    ready_seen: bool
    state: str = "unknown"
    evidence: list[str] = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        return self.cls in CRASH_CLASSES

    def to_json(self) -> dict:
        return {"class": self.cls, "state": self.state, "line": self.line, "summary": self.summary,
                "excerpt": list(self.excerpt), "server": self.server, "ready_seen": self.ready_seen,
                "evidence": list(self.evidence)}


def decide(episode: Episode, server_hits: list[Hit], rules: RuleSet) -> TriageResult:
    server = _pick_server(server_hits, rules.server_weight)
    signs: dict[str, list[Hit]] = {}
    fatal: dict[str, list[Hit]] = {}
    for index, hit in episode.first.items():
        bucket = fatal if hit.rule.kind == "class" else signs
        bucket.setdefault(hit.rule.name, []).append(hit)
    ready_seen = episode.ready_line is not None
    evidence = _evidence(signs, episode)

    root = _root_cause(episode, fatal, rules)
    if root is not None:
        cls, hit, summary = root
        state = _failure_state(cls, hit, episode)
        return _result(cls, hit, summary, server, ready_seen, state, evidence)

    last_error = _last(episode, "error")
    exit_hit = _first_of(signs.get("exit"))
    if episode.http500_after_ready and episode.http500_after_ready < HTTP500_BURST:
        hit = _first_after_ready(episode, "http500")
        state = "serving" if signs.get("serving") else "ready"
        return _result("unknown", hit, "a request failed with HTTP 500 after the server was ready",
                       server, ready_seen, state, evidence)
    if episode.http500_after_ready >= HTTP500_BURST:
        hit = _first_after_ready(episode, "http500")
        return _result("engine-dead", hit, f"{episode.http500_after_ready} requests failed with HTTP 500 after ready",
                       server, ready_seen, "crashed", evidence)
    if exit_hit is not None:
        return _result("unknown", exit_hit, f"the process exited with a failure status: {_trim(exit_hit.text, 160)}",
                       server, ready_seen, "crashed", evidence)

    stopped = _first_of(signs.get("stopped"))
    serving = _first_of(signs.get("serving"))
    ready = _first_of(signs.get("ready"))
    loading = _first_of((signs.get("loading") or []) + (signs.get("start") or []))
    if ready_seen:
        state = "stopped" if stopped is not None and stopped.line >= episode.ready_line else (
            "serving" if serving is not None else "ready")
        if last_error is not None and last_error.after_ready:
            return _result("unknown", last_error, f"an error after the server was ready: {_trim(last_error.text, 160)}",
                           server, ready_seen, state, evidence)
        if state == "stopped":
            return _result("healthy", stopped, "server was serving, then stopped in order", server, True, state, evidence)
        decisive = ready or serving
        summary = "server serving requests" if serving is not None else "server ready"
        return _result("healthy", decisive, summary, server, True, state, evidence)
    if stopped is not None:
        return _result("unknown", stopped, "the server stopped before it was ready", server, False, "stopped", evidence)
    if loading is not None:
        return _result("unknown", loading, "server starting, not ready yet: the log proves nothing more",
                       server, False, "loading", evidence)
    if last_error is not None:
        return _result("unknown", last_error, f"an error line, and no sign the server ever ran: {_trim(last_error.text, 160)}",
                       server, False, "unknown", evidence)
    return TriageResult("unknown", None, "no known failure or health signature in the log", [], server, False,
                        "unknown", evidence)


def _root_cause(episode: Episode, fatal: dict[str, list[Hit]], rules: RuleSet):
    """(class, decisive hit, summary) of the run's failure, or None."""
    causes: list[tuple[str, Hit, str]] = []
    for cls, hits in fatal.items():
        if cls in CAUSES:
            hit = _decisive(hits)
            causes.append((cls, hit, _summary(hit)))
    exceptions = _exceptions(episode)
    for hit in exceptions:
        derived = _from_traceback(hit, rules)
        if derived is not None:
            cls, why = derived
            causes.append((cls, hit, f"{why}: {_trim(hit.text.strip(), 160)}"))
    truncated = _truncated_traceback(episode, exceptions, rules)
    if truncated is not None:
        causes.append(truncated)
    killed = _decisive(fatal["process-killed"]) if "process-killed" in fatal else None
    if causes:
        best = max(causes, key=lambda c: (rules.priority.get(c[0], 0), -c[1].line))
        if killed is None or min(c[1].line for c in causes) <= killed.line:
            return best
    if killed is not None:
        return "process-killed", killed, _summary(killed)
    if "engine-dead" in fatal:
        hit = _decisive(fatal["engine-dead"])
        return "engine-dead", hit, _summary(hit)
    if "python-exception" in fatal:
        strong = [h for h in episode.exceptions if not h.rule.weak]
        stopped = [h for h in episode.last.values() if h.rule.kind == "sign" and h.rule.name == "stopped"]
        if not strong and any(s.line > _decisive(fatal["python-exception"]).line for s in stopped):
            return None  # a traceback that ends an orderly stop (Ctrl-C)
        hit = strong[-1] if strong else _decisive(fatal["python-exception"])
        summary = _summary(hit)
        if hit.frame:
            summary += f" (in {hit.frame})"
        return "python-exception", hit, summary
    return None


def _exceptions(episode: Episode) -> list[Hit]:
    seen = list(episode.exceptions)
    if episode.first_exception is not None and episode.first_exception not in seen:
        seen.insert(0, episode.first_exception)
    return seen


def _from_traceback(hit: Hit, rules: RuleSet) -> tuple[str, str] | None:
    """A class for a traceback whose message no rule knows: by exception type, then by frame."""
    head = hit.text.strip().split(":", 1)[0]
    name = head.rsplit(" ", 1)[-1].rsplit(".", 1)[-1]
    if name in rules.exception_class:
        return rules.exception_class[name], f"{name}"
    if hit.frame and hit.frame in rules.frame_class:
        return rules.frame_class[hit.frame], f"exception in {hit.frame}"
    return None


def _truncated_traceback(episode: Episode, exceptions: list[Hit], rules: RuleSet):
    """A traceback cut off before its exception line: judge it by its deepest
    frame's function, or by what that frame's source line calls."""
    frame = episode.frame_hit
    if frame is None or any(e.line > frame.line and not e.rule.weak for e in exceptions):
        return None
    for name in (frame.frame, *reversed(episode.frame_calls)):
        if name in rules.frame_class:
            return rules.frame_class[name], frame, f"traceback cut off in {name}: {_trim(frame.text.strip(), 160)}"
    return None


def _failure_state(cls: str, hit: Hit, episode: Episode) -> str:
    if cls != "hang":
        return "crashed"
    for index, last in episode.last.items():
        rule = last.rule
        ended = (rule.kind == "class" and rule.name in ("process-killed", "engine-dead")) or \
                (rule.kind == "sign" and rule.name == "exit")
        if ended and last.line > hit.line:
            return "crashed"
    return "hung"


def _decisive(hits: list[Hit]) -> Hit:
    strong = [h for h in hits if not h.rule.weak] or hits
    return min(strong, key=lambda h: h.line)


def _first_of(hits: list[Hit] | None) -> Hit | None:
    return min(hits, key=lambda h: h.line) if hits else None


def _last(episode: Episode, sign: str) -> Hit | None:
    found = [h for h in episode.last.values() if h.rule.kind == "sign" and h.rule.name == sign]
    return max(found, key=lambda h: h.line) if found else None


def _first_after_ready(episode: Episode, sign: str) -> Hit | None:
    found = [h for h in episode.first.values() if h.rule.kind == "sign" and h.rule.name == sign]
    found += [h for h in episode.last.values() if h.rule.kind == "sign" and h.rule.name == sign]
    after = [h for h in found if h.after_ready] or found
    return min(after, key=lambda h: h.line) if after else None


def _evidence(signs: dict[str, list[Hit]], episode: Episode) -> list[str]:
    order = ("start", "loading", "ready", "serving", "error", "http500", "stopped", "exit")
    out = [f"{name} at line {min(h.line for h in signs[name])}" for name in order if name in signs]
    if episode.start_line:
        out.insert(0, f"last run of the server starts at line {episode.start_line}")
    return out


def _summary(hit: Hit) -> str:
    detail = _trim(hit.text.strip(), 160)
    return f"{hit.rule.summary}: {detail}" if hit.rule.summary else detail


def _result(cls: str, hit: Hit | None, summary: str, server: str, ready_seen: bool, state: str,
            evidence: list[str]) -> TriageResult:
    if hit is None:
        return TriageResult(cls, None, summary, [], server, ready_seen, state, evidence)
    excerpt = [_trim(x) for x in hit.before + [hit.text] + hit.after]
    return TriageResult(cls, hit.line, summary, excerpt, server, ready_seen, state, evidence)


def _pick_server(hits: list[Hit], weights: dict[str, int]) -> str:
    if not hits:
        return "unknown"
    best = max(hits, key=lambda h: (weights.get(h.rule.name, 0), -h.line))
    return best.rule.name


def _trim(text: str, width: int = EXCERPT_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
