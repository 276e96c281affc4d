"""What a log line structurally is, whatever the server: a traceback's final exception
(type and message), a fatal error line (Rust's `Error:`, a panic, C++'s `what():`),
a list of possible causes, or a notice that something died elsewhere.

The verdict reads a class from these shapes plus the meaning of the message
(`meanings`), so a new server's wording needs no new phrase rule when its
shape is one of these.
"""
from __future__ import annotations

import re

# `pkg.mod.SomeError: message` or a bare `SomeError` ending the line; the last one on the line wins
# (a logger prefix with colons before it is not the type)
_EXCEPTION = re.compile(
    r"(?:^|[\s\]\)>|:])((?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Failure|Interrupt))"
    r"(?::\s*(.*))?$")
_FATAL = re.compile(r"^(?:Error|panic|FATAL|fatal error): (.+)|[Aa]pplication shutdown with error: (.+)|"
                    r"panicked at [^\n]*?: ?(.+)|what\(\):\s+(.+)|terminate called after throwing an instance of (.+)")
# a line that enumerates causes names none of them: "(1) ... (2) ...", "potential root causes"
_ENUMERATION = re.compile(
    r"\(1\).{0,300}\(2\)|(?:^|\s)1\).{0,300}\s2\)|(?:potential|possible|common|some) (?:root )?causes|"
    r"(?:may|might|could|can) be caused by|one of the following (?:reasons|causes)", re.I)
# a message that reports a death elsewhere and names no cause: the cause is in another process's log
_DEATH_NOTICE = re.compile(
    r"ActorDiedError|RayActorError|actor died unexpectedly|worker process has died|"
    r"[Ww]orker (?:died|was killed) or|died unexpectedly before finishing|"
    r"Executor worker returned error|Failed to launch model|[Ff]ailed to initialize stub", re.I)


def exception_of(text: str) -> tuple[str, str] | None:
    """(type, message) of a traceback's final exception line, or of a fatal error line."""
    line = text.strip()
    fatal = _FATAL.search(line)
    if fatal:
        message = next(group for group in fatal.groups() if group)
        return "Error", message.strip()
    found = _EXCEPTION.search(line)
    if not found:
        return None
    name = found.group(1).rsplit(".", 1)[-1]
    return name, (found.group(2) or "").strip()


def enumerates_causes(text: str) -> bool:
    """Does the line list possible causes? Such a line names none of them."""
    return bool(_ENUMERATION.search(text))


def death_notice(text: str) -> bool:
    """Does the line report that something died (or failed to start) elsewhere, naming no cause?"""
    return bool(_DEATH_NOTICE.search(text))
