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

import re
from dataclasses import dataclass, field
from typing import Any

from . import strength
from .episode import Episode, Hit
from .meanings import meaning_of
from .rules import CAUSES, CRASH_CLASSES, SIGNAL_CLASSES, RuleSet
from .structure import death_notice, enumerates_causes, exception_of

EXCERPT_WIDTH = 400
_WHAT = re.compile(r"what\(\):\s+(.+)")
HTTP500_BURST = 3
# The kinds of evidence a verdict can rest on (`TriageResult.sources`), strongest first.
PROCESS, LIVENESS, LIFECYCLE, EPISODE = "process", "liveness", "log lifecycle", "final episode"
SCHEDULER, DRIVER = "scheduler", "driver"


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
    # which kinds of evidence the verdict rests on: process, liveness, log lifecycle, final episode
    sources: list[str] = field(default_factory=list)
    # how strong the log's own reading is (see strength): its evidence kinds (structure, phrase), a
    # confidence in [0, 1], what decided it, and for an `unknown` the most suspicious lines and why
    kinds: list[str] = field(default_factory=list)
    confidence: float = 0.0
    decided_by: str = ""
    suspicious: list[dict[str, Any]] = field(default_factory=list)
    last_seen_line: int | None = None  # the last line that showed the server ready or serving
    process: str | None = None  # the process that printed the decisive line, from its log prefix

    @property
    def crashed(self) -> bool:
        return self.cls in CRASH_CLASSES

    @property
    def process_known(self) -> bool:
        """Is anything known of the process beside its log (exit status, a stop asked for, liveness)?"""
        return PROCESS in self.sources or LIVENESS in self.sources

    @property
    def evidence_kinds(self) -> list[str]:
        """The kinds of evidence the verdict rests on, strongest first (strength.KINDS)."""
        had = set(self.kinds)
        if self.process_known:
            had.add("process")
        if SCHEDULER in self.sources:
            had.add("scheduler")
        if DRIVER in self.sources:
            had.add("driver")
        return [kind for kind in strength.KINDS if kind in had]

    @property
    def overall_confidence(self) -> float:
        """The log's confidence, raised when the process or the driver decided the class."""
        if DRIVER in self.sources and self.decided_by.startswith("driver"):
            return max(self.confidence, 0.97)
        if self.process_known and self.cls != "unknown" and self.state in ("crashed", "stopped"):
            return max(self.confidence, 0.95)
        return self.confidence

    def last_seen(self) -> str:
        """What a log alone proves of a server that looked alive: where it was last seen so."""
        if self.process_known or self.state not in ("ready", "serving", "loading"):
            return ""
        where = f" at line {self.last_seen_line}" if self.last_seen_line is not None else ""
        return f"last seen {self.state}{where}; the process's fate is unknown (no process evidence)"

    def to_json(self) -> dict[str, Any]:
        return {"class": self.cls, "state": self.state, "line": self.line, "summary": self.summary,
                "excerpt": list(self.excerpt), "server": self.server, "ready_seen": self.ready_seen,
                "evidence": list(self.evidence), "sources": list(self.sources),
                "evidence_kinds": self.evidence_kinds, "confidence": round(self.overall_confidence, 2),
                "decided_by": self.decided_by, "suspicious": [dict(s) for s in self.suspicious],
                "last_seen": self.last_seen() or None,
                "process_fate": "known" if self.process_known else "unknown",
                "printed_by": self.process}


# What a failure looks like from outside: after an orderly stop began these are
# shutdown noise, and after a request failed and the server went on serving they
# belonged to that request.
CONSEQUENCES = frozenset({"engine-dead", "python-exception", "process-killed", "hang", "nccl"})
REQUEST_LEVEL = frozenset({"engine-dead", "python-exception", "hang"})
# Exceptions that carry a stop through the stack: after a stop sign they are the stop, not a failure.
STOP_EXCEPTIONS = frozenset({"KeyboardInterrupt", "SignalException", "SystemExit", "CancelledError"})
KILL_THEN_STOP = 2  # lines between a kill and the stop its supervisor reports (ollama: 'signal: killed', then stopped)


@dataclass
class Phases:
    """Where the run's lifecycle turned: ready, the start of an orderly stop after it,
    and the last request answered after a failure notice."""

    ready: int | None
    stop: int | None
    resumed: int | None
    stop_lines: tuple[int, ...] = ()  # every orderly-stop sign kept (first and last of each rule)

    def superseded(self, hit: Hit) -> bool:
        """Did a later phase show this failure line was not the end of the run?"""
        name = hit.rule.name if hit.rule.kind == "class" else (
            "python-exception" if hit.rule.kind == "sign" and hit.rule.name in ("error", "http500") else "")
        if name == "process-killed" and any(0 < line - hit.line <= KILL_THEN_STOP for line in self.stop_lines):
            return True  # the supervisor's own stop: it killed the process and says it stopped in order
        if hit.rule.notice and hit.rule.kind == "class" and self.ready is not None and hit.line < self.ready:
            return True  # a slow-start notice, and the server became ready after it
        if self.stop is not None and hit.line > self.stop and name in CONSEQUENCES:
            return True  # noise of an orderly shutdown
        if self.resumed is not None and hit.after_ready and hit.line < self.resumed and name in REQUEST_LEVEL:
            return True  # a failed request; the server answered more after it
        return False


def decide(episode: Episode, server_hits: list[Hit], rules: RuleSet) -> TriageResult:
    server = _pick_server(server_hits, rules.server_weight)
    signs: dict[str, list[Hit]] = {}
    for hit in episode.first.values():
        if hit.rule.kind == "sign":
            signs.setdefault(hit.rule.name, []).append(hit)
    ready_seen = episode.ready_line is not None
    stopped = _first_of(signs.get("stopped"))
    phases = Phases(episode.ready_line,
                    stopped.line if stopped is not None and episode.ready_line is not None
                    and stopped.line > episode.ready_line else None,
                    episode.resumed_line, tuple(h.line for h in _hits_of(episode, "stopped")))
    fatal: dict[str, list[Hit]] = {}
    dropped: list[Hit] = []
    for hit in _first_and_last(episode):
        if hit.rule.kind != "class":
            continue
        if enumerates_causes(hit.text):
            continue  # a list of possible causes names none of them
        if phases.superseded(hit):
            dropped.append(hit)
        else:
            fatal.setdefault(hit.rule.name, []).append(hit)
    evidence = _evidence(signs, episode)
    sources = [LIFECYCLE] if signs else []

    def result(cls: str, hit: Hit | None, summary: str, state: str, how: str = "nothing") -> TriageResult:
        out = _result(cls, hit, summary, server, ready_seen, state, evidence)
        out.sources = sources + ([EPISODE] if fatal or dropped else [])
        return _weigh(out, how, episode)

    root = _root_cause(episode, fatal, rules, phases)
    if root is not None:
        cls, hit, summary, how = root
        return result(cls, hit, summary, _failure_state(cls, hit, episode), how)

    errors = [h for h in _hits_of(episode, "error") if h.after_ready and not phases.superseded(h)]
    last_error = max(errors, key=lambda h: h.line) if errors else None
    if last_error is None and not ready_seen:
        last_error = _last(episode, "error")
    exit_hit = _first_of(signs.get("exit"))
    failed_500 = [h for h in _hits_of(episode, "http500") if h.after_ready]
    live_500 = [h for h in failed_500 if not phases.superseded(h)]
    if live_500 and episode.http500_after_ready < HTTP500_BURST:
        state = "serving" if signs.get("serving") else "ready"
        return result("unknown", min(live_500, key=lambda h: h.line),
                      "a request failed with HTTP 500 after the server was ready", state)
    if live_500:
        return result("engine-dead", min(failed_500, key=lambda h: h.line),
                      f"{episode.http500_after_ready} requests failed with HTTP 500 after ready", "crashed",
                      "http500-burst")
    if exit_hit is not None:
        return result("unknown", exit_hit, f"the process exited with a failure status: {_trim(exit_hit.text, 160)}",
                      "crashed", "exit")

    serving = _first_of(signs.get("serving"))
    ready = _first_of(signs.get("ready"))
    loading = _first_of((signs.get("loading") or []) + (signs.get("start") or []))
    if episode.ready_line is not None:  # ready_seen
        state = "stopped" if phases.stop is not None else ("serving" if serving is not None else "ready")
        if last_error is not None:
            return result("unknown", last_error, f"an error after the server was ready: {_trim(last_error.text, 160)}",
                          state)
        request_failures = [h for h in dropped + failed_500 + _hits_of(episode, "error")
                            if h.after_ready and phases.resumed is not None
                            and h.line < phases.resumed and (phases.stop is None or h.line < phases.stop)]
        if request_failures:
            first = min(request_failures, key=lambda h: h.line)
            return result("request-error", first,
                          f"a request failed ({_trim(first.text.strip(), 120)}); the server went on answering "
                          f"requests (line {phases.resumed})", "stopped" if state == "stopped" else "serving",
                          "request-error")
        if phases.stop is not None:  # state == "stopped"
            noise = " (its shutdown logged errors: noise of the stop)" if any(
                h.line > phases.stop for h in dropped) else ""
            return result("healthy", stopped, "server was serving, then stopped in order" + noise, state, "stopped")
        decisive = ready or serving
        summary = "server serving requests" if serving is not None else "server ready"
        if any(h.rule.notice and h.line < episode.ready_line for h in dropped):
            summary += " (after a slow start: an early no-progress notice was not a hang)"
        out = result("healthy", decisive, summary, state, "serving" if serving is not None else "ready")
        out.last_seen_line = _last_alive_line(episode)
        return out
    if stopped is not None:
        return result("unknown", stopped, "the server stopped before it was ready", "stopped")
    if loading is not None:
        out = result("unknown", loading, "server starting, not ready yet: the log proves nothing more", "loading")
        out.last_seen_line = max(h.line for h in (signs.get("loading") or []) + (signs.get("start") or []))
        return out
    if last_error is not None:
        return result("unknown", last_error, f"an error line, and no sign the server ever ran: {_trim(last_error.text, 160)}",
                      "unknown")
    return result("unknown", None, "no known failure or health signature in the log", "unknown")


def _first_and_last(episode: Episode) -> list[Hit]:
    """Every rule's first hit, and its last where that is another line."""
    out = list(episode.first.values())
    out += [hit for index, hit in episode.last.items() if hit is not episode.first.get(index)]
    return out


def _hits_of(episode: Episode, sign: str) -> list[Hit]:
    return [h for h in _first_and_last(episode) if h.rule.kind == "sign" and h.rule.name == sign]


def _root_cause(episode: Episode, fatal: dict[str, list[Hit]], rules: RuleSet,
                phases: Phases) -> tuple[str, Hit, str, str] | None:
    """(class, decisive hit, summary, how it was decided) of the run's failure, or None."""
    causes: list[tuple[str, Hit, str, str]] = []
    for cls, hits in fatal.items():
        if cls in CAUSES:
            hit = _decisive(hits)
            how = "cause-in-exception" if exception_of(hit.text) else ("cause-weak" if hit.rule.weak else "cause")
            causes.append((cls, hit, _summary(hit), how))
    exceptions = [h for h in _exceptions(episode) if not phases.superseded(h)]
    for hit in exceptions:
        derived = _from_traceback(hit, rules)
        if derived is not None:
            cls, why, how = derived
            causes.append((cls, hit, f"{why}: {_trim(hit.text.strip(), 160)}", how))
    truncated = _truncated_traceback(episode, exceptions, rules)
    if truncated is not None and not phases.superseded(truncated[1]):
        causes.append(truncated)
    killed = _decisive(fatal["process-killed"]) if "process-killed" in fatal else None
    if causes:
        best = max(causes, key=lambda c: (rules.priority.get(c[0], 0), -c[1].line))
        if killed is None or min(c[1].line for c in causes) <= killed.line:
            return best
    if killed is not None:
        return "process-killed", killed, _summary(killed), "killed"
    strong = [h for h in episode.exceptions if not h.rule.weak and not phases.superseded(h)
              and not enumerates_causes(h.text) and _exception_type(h) not in STOP_EXCEPTIONS]
    signalled = [(cls, _decisive(hits)) for cls, hits in fatal.items() if cls in SIGNAL_CLASSES]
    if signalled:
        cls, hit = min(signalled, key=lambda c: c[1].line)
        what = what_of(hit)
        if what is not None:
            # an uncaught C++ exception: its what() message is the cause, and its meaning the class
            meaning = meaning_of(what)
            if meaning is not None and meaning in CAUSES:
                return meaning, hit, f"{meaning.replace('-', ' ')} (uncaught C++ exception): what(): {_trim(what, 160)}", \
                    "exception-meaning"
            return cls, hit, f"{hit.rule.summary}: what(): {_trim(what, 160)}", "signal"
        first_exception = min(strong, key=lambda h: h.line) if strong else None
        if first_exception is not None and first_exception.line < hit.line and \
                not death_notice(first_exception.text) and "python-exception" in fatal:
            # the first root cause, not the last consequence: an exception, then the process dies of a signal
            summary = f"{_summary(first_exception)}; then {hit.rule.summary or cls} (line {hit.line})"
            return "python-exception", first_exception, summary, "exception"
        return cls, hit, _summary(hit), "signal"
    cut = _cut_traceback(episode, strong)
    if "engine-dead" in fatal:
        hit = _decisive(fatal["engine-dead"])
        if cut is not None and hit.line < cut.line:
            # "hit an exception" / "failed to start", then a traceback that stops in its frames: the
            # engine died (its notice says so), of an exception the log does not show; point at the frame
            where = f" in {cut.frame}" if cut.frame else ""
            return ("engine-dead", hit, f"{_summary(hit)}; its traceback is cut off{where} (line {cut.line}): "
                    "what was raised is not in the log", "engine-dead")
        own = [h for h in strong if h.line == hit.line and not death_notice(h.text)]
        if own and hit.rule.summary == "the engine process crashed":
            # the line is a traceback's final exception whose message merely names a runtime error:
            # the exception is the structure, the crash phrase only its wording
            return "python-exception", own[0], _summary(own[0]), "exception"
        return "engine-dead", hit, _summary(hit), "death-notice" if death_notice(hit.text) else "engine-dead"
    if "python-exception" in fatal:
        stopped = _hits_of(episode, "stopped")
        strong_all = [h for h in episode.exceptions if not h.rule.weak and not phases.superseded(h)]
        if not strong_all and any(s.line > _decisive(fatal["python-exception"]).line for s in stopped):
            return None  # a traceback that ends an orderly stop (Ctrl-C)
        if stopped and strong_all and all(_exception_type(h) in STOP_EXCEPTIONS for h in strong_all) and \
                min(s.line for s in stopped) <= min(h.line for h in strong_all):
            return None  # the stop's own signal, raised through the stack (KeyboardInterrupt, SignalException)
        if not strong_all and cut is not None:
            return "unknown", cut, _cut_summary(cut, None), "cut-traceback"
        hit = strong_all[-1] if strong_all else _decisive(fatal["python-exception"])
        summary = _summary(hit)
        if hit.frame:
            summary += f" (in {hit.frame})"
        how = "death-notice" if death_notice(hit.text) or enumerates_causes(hit.text) else (
            "exception" if strong_all else "cause-weak")
        return "python-exception", hit, summary, how
    return None


def what_of(hit: Hit) -> str | None:
    """The message of an uncaught C++ exception: the `what():` line libstdc++ prints just below
    'terminate called after throwing an instance of ...' (on that line when the log joined them)."""
    if "terminate called" not in hit.text:
        return None
    for line in [hit.text] + hit.after[:3]:
        found = _WHAT.search(line)
        if found:
            return found.group(1).strip()
    return None


def _cut_traceback(episode: Episode, strong: list[Hit]) -> Hit | None:
    """The deepest frame of a traceback cut off before its exception line, when no traceback of the
    run ends in its exception: the log does not show what was raised, only where it stopped."""
    frame = episode.frame_hit
    if frame is None or strong:
        return None
    return frame


def _cut_summary(frame: Hit, header: Hit | None) -> str:
    where = f" in {frame.frame}" if frame.frame else ""
    head = f"; above it: {_trim(header.text.strip(), 120)} (line {header.line})" if header is not None else ""
    return (f"a traceback cut off before its exception{where} (line {frame.line}): what was raised is not in "
            f"the log{head}")


def _exceptions(episode: Episode) -> list[Hit]:
    seen = list(episode.exceptions)
    if episode.first_exception is not None and episode.first_exception not in seen:
        seen.insert(0, episode.first_exception)
    return seen


def _exception_type(hit: Hit) -> str:
    """`SignalException` from `torch.distributed...api.SignalException: Process 1 got signal: 2`."""
    found = exception_of(hit.text)
    if found is not None and found[0] != "Error":
        return found[0]
    head = hit.text.strip().split(":", 1)[0]
    return head.rsplit(" ", 1)[-1].rsplit(".", 1)[-1]


def _from_traceback(hit: Hit, rules: RuleSet) -> tuple[str, str, str] | None:
    """A class for a traceback whose message no rule knows: by exception type, then by what its
    message means (a small vocabulary, whatever the server), then by its deepest frame."""
    name = _exception_type(hit)
    if name in rules.exception_class:
        return rules.exception_class[name], f"{name}", "exception-type"
    found = exception_of(hit.text)
    meaning = meaning_of(found[1]) if found is not None and found[1] else None
    if meaning is not None and not enumerates_causes(hit.text):
        return meaning, f"{name} ({meaning.replace('-', ' ')})", "exception-meaning"
    if hit.frame and hit.frame in rules.frame_class:
        return rules.frame_class[hit.frame], f"exception in {hit.frame}", "exception-frame"
    return None


def _truncated_traceback(episode: Episode, exceptions: list[Hit], rules: RuleSet) -> tuple[str, Hit, str, str] | None:
    """A traceback cut off before its exception line: judge it by its deepest
    frame's function, or by what that frame's source line calls."""
    frame = episode.frame_hit
    if frame is None or any(e.line > frame.line and not e.rule.weak for e in exceptions):
        return None
    for name in (frame.frame, *reversed(episode.frame_calls)):
        if name in rules.frame_class:
            return (rules.frame_class[name], frame, f"traceback cut off in {name}: {_trim(frame.text.strip(), 160)}",
                    "truncated-traceback")
    return None


def _weigh(out: TriageResult, how: str, episode: Episode) -> TriageResult:
    """Give the verdict its evidence kinds and confidence; below the threshold a class is not
    given at all: `unknown`, with the run's most suspicious lines and why each is."""
    weight = strength.of(how)
    out.kinds, out.confidence, out.decided_by = list(weight.kinds), weight.confidence, how
    if out.cls not in ("unknown", "healthy") and weight.confidence < strength.THRESHOLD:
        out.summary = f"not sure enough to name a class (it looks like {out.cls}): {out.summary}"
        out.cls = "unknown"
    if out.cls == "unknown":
        out.suspicious = strength.suspicious_lines(episode)
        cut = episode.frame_hit
        if how == "cut-traceback" and cut is not None:
            where = f", in {cut.frame}" if cut.frame else ""
            frame = {"line": cut.line, "text": cut.text.strip()[:400],
                     "why": f"the traceback is cut off here{where}: its exception is not in the log"}
            out.suspicious = [frame] + [s for s in out.suspicious if s["line"] != cut.line][:strength.SUSPICIOUS - 1]
    return out


def _last_alive_line(episode: Episode) -> int | None:
    """The last line of the run that showed the server ready or answering."""
    lines = [h.line for h in list(episode.first.values()) + list(episode.last.values())
             if h.rule.kind == "sign" and h.rule.name in ("ready", "serving")]
    return max(lines) if lines else episode.ready_line


def _failure_state(cls: str, hit: Hit, episode: Episode) -> str:
    if cls != "hang":
        return "crashed"
    for last in episode.last.values():
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
    if hit.process and cls not in ("healthy",):
        summary += f" [printed by {hit.process}]"
    out = TriageResult(cls, hit.line, summary, excerpt, server, ready_seen, state, evidence)
    out.process = hit.process
    return out


def _pick_server(hits: list[Hit], weights: dict[str, int]) -> str:
    if not hits:
        return "unknown"
    best = max(hits, key=lambda h: (weights.get(h.rule.name, 0), -h.line))
    return best.rule.name


def _trim(text: str, width: int = EXCERPT_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
