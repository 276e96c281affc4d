"""The one boundary between outside text and the operator's terminal.

Log lines, process names, task text, server bodies and file names come from
people and programs gpudeck does not control. Written raw, `ESC ] 52` sets the
operator's clipboard (through tmux too), `ESC [2J` wipes the screen, BEL rings,
a C1 byte acts as an escape and a bidi override reorders what is read. So every
human-readable path passes such text through `clean` (plain strings for the
CLI) or `safe_text` (a rich Text for widgets, never parsed as markup).

What `clean` does:
- colour codes (SGR, `ESC [ ... m`) are dropped: they only style and logs are
  full of them;
- every other control character becomes visible: C0 and DEL as their Unicode
  control pictures (ESC -> ␛, BEL -> ␇), so a CSI or OSC sequence reads as
  `␛]52;c;...␇`; C1 (U+0080-U+009F), bidi overrides and isolates, the Unicode
  line/paragraph separators and lone surrogates (undecodable bytes) as `\\uXXXX`;
- tab is kept; newline is kept unless the text must stay on one line
  (`clean_line`), and `\\r\\n` counts as a newline.

JSON output needs none of this: JSON escaping already writes control
characters as `\\uXXXX`.

No textual import here: the engine uses `clean`; `safe_text` needs only rich.
"""
from __future__ import annotations

import re
from typing import Any

# A complete colour/attribute sequence: dropped without a trace.
_SGR = re.compile(r"\x1b\[[0-9;:]*m")

_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_SEPARATORS = [0x2028, 0x2029]


def _table(keep_newline: bool) -> dict[int, str]:
    table: dict[int, str] = {}
    for code in range(0x20):
        if code == 0x09 or (keep_newline and code == 0x0A):
            continue
        table[code] = chr(0x2400 + code)  # ␀ … ␟
    table[0x7F] = "\u2421"  # ␡
    for code in [*range(0x80, 0xA0), *_BIDI, *_SEPARATORS, *range(0xD800, 0xE000)]:
        table[code] = f"\\u{code:04x}"
    return table


_MULTILINE = _table(keep_newline=True)
_ONE_LINE = _table(keep_newline=False)

# Anything `clean` would change; a fast test that lets most text through untouched.
UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)
# What may never reach a terminal in multi-line output (newline is fine there).
UNSAFE_MULTILINE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)


def clean(text: Any, *, newlines: bool = True) -> str:
    """`text` made safe to print: no control character but tab (and newline when `newlines`)."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    if not UNSAFE.search(text):
        return text
    text = _SGR.sub("", text).replace("\r\n", "\n")
    return text.translate(_MULTILINE if newlines else _ONE_LINE)


def clean_line(text: Any) -> str:
    """`text` for one line of output (a table cell, a log line): newlines become ␊ too."""
    return clean(text, newlines=False)


def is_clean(text: str, *, newlines: bool = True) -> bool:
    """True when `text` holds nothing that `clean` would change (tests use it on rendered output)."""
    return not (UNSAFE_MULTILINE if newlines else UNSAFE).search(text)


def safe_text(text: Any, style: str = "", *, newlines: bool = False, **kwargs: Any):
    """A rich Text holding cleaned `text` literally (never markup), for a widget to draw."""
    from rich.text import Text

    return Text(clean(text, newlines=newlines), style=style, **kwargs)


def append_safe(target: Any, text: Any, style: str = "") -> Any:
    """Append cleaned `text` (one line) to a rich Text; returns it."""
    target.append(clean_line(text), style=style)
    return target


# One character for one: a rich Text keeps its style spans when only characters are swapped.
_SAME_LENGTH = {code: ("\ufffd" if len(repl) > 1 else repl) for code, repl in _ONE_LINE.items()}


def safe_cell(value: Any) -> Any:
    """A table cell made safe: a str becomes a literal Text (a DataTable reads a str as markup);
    a Text with control characters gets them swapped one for one, its styles kept; anything else
    (a number, another renderable) is left alone."""
    from rich.text import Text

    if isinstance(value, str):
        return Text(clean_line(value))
    if isinstance(value, Text):
        plain = value.plain
        if is_clean(plain, newlines=False):
            return value
        copy = value.copy()
        copy.plain = plain.translate(_SAME_LENGTH)
        return copy
    return value


class CleanWriter:
    """A text stream that cleans everything written through it (the CLI's stdout and stderr).

    Each write is cleaned on its own: an escape sequence split over two writes
    still cannot act, because its ESC alone is made visible. `raw` is the
    stream underneath, for the one deliberate sequence gpudeck writes itself
    (clearing the screen between `gpus --watch` samples).
    """

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(clean(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


# ---- Markdown (the findings report, a task board export) -------------------

# What outside text could use to become markup in a Markdown document read as HTML: raw HTML and
# entities, links and images, code spans, table pipes, emphasis and strike-through. `_` inside a word
# (mem_fraction_static) starts nothing, so it stays as written.
_MD_SPECIAL = re.compile(r"[\\`*\[\]|<>&~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
_MD_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def markdown_text(text: Any) -> str:
    """Outside text for one line of a Markdown document: cleaned, then every character that could
    open markup or raw HTML escaped, so a model name like `<img onerror=…>` reads as written."""
    line = clean_line(text.replace("\n", " ") if isinstance(text, str) else text)
    return _MD_SPECIAL.sub(lambda m: _MD_ENTITY.get(m.group(), "\\" + m.group()), line)


def markdown_code(text: Any) -> str:
    """Outside text as a Markdown code span (a path, a file name): its fence is longer than any run
    of backticks inside, so the text cannot close it; inside a span nothing is markup."""
    line = clean_line(text)
    longest = max((len(run) for run in re.findall(r"`+", line)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if line.startswith("`") or line.endswith("`") else ""
    return f"{fence}{pad}{line}{pad}{fence}"
