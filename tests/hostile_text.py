"""One hostile corpus for every human-readable path: text that tries to drive the terminal.

Each entry is something a user on a shared host, a server, a log or a file name
can put in front of the operator. The tests feed the same list through the CLI
and the TUI and check that nothing of it reaches the terminal as a control.
"""
from __future__ import annotations

import re

HOSTILE = [
    "\x1b]52;c;ZWNobyBvd25lZA==\x07",                     # OSC 52: write the operator's clipboard
    "\x1b]8;;file:///etc/passwd\x1b\\click me\x1b]8;;\x1b\\",  # OSC 8: a hyperlink
    "\x1b[2J\x1b[H",                                       # CSI 2J: wipe the screen
    "\x1b[?1049h",                                         # switch to the alternate screen
    "ring\x07",                                            # BEL
    "[bold red]x.sh",                                      # Rich markup
    "[link=file:///etc/passwd]innocent[/link]",            # a markup link
    "\x9b2J",                                              # C1 CSI (U+009B)
    "\x9d52;c;aGk=\x9c",                                   # C1 OSC ... ST
    "run\u202ehs.exe",                                     # bidi override: reads as run"exe.sh"
    "\x1bc",                                               # RIS: full terminal reset
    "\x1bP+q544e\x1b\\",                                   # DCS: ask the terminal for its capabilities
    "\x1b[6n",                                             # ask for the cursor position (answer lands as input)
    "\x7fgone\x08\x08",                                    # DEL and backspaces
    "\r\x1b[Kfake prompt $",                               # carriage return + erase line
    "nul\x00byte",
    "\x1b[31mred\x1b[0m",                                  # plain colour codes
]

# In one line, with a marker each test can look for.
MARK = "HOSTILE"
LINE = MARK + " " + " ".join(HOSTILE)

# What must never reach a terminal: C0 but tab and newline, DEL, C1, bidi controls, line separators.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]")


def unsafe_chars(text: str) -> list[str]:
    """The unsafe characters in `text`, as escapes (for a readable assertion message)."""
    return sorted({ascii(c) for c in UNSAFE.findall(text)})
