"""The equivalent command of a key (`e`): what to type to do the same, each line whole, copyable.

The lines come from the engine (console/servers/equivalent.py, console/bench/process.py); this
dialog shows them and copies them all with `y` (OSC 52 where the terminal takes it, and a file).
"""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from .dialog import Dialog

from console.safe_text import clean_line, safe_text

from .clipboard import copy_text


class Equivalent(Dialog[None]):
    BINDINGS = [Binding("escape,q,e", "dismiss(None)", "close"), Binding("y", "copy", "copy all")]
    DEFAULT_CSS = """
    Equivalent { align: center middle; }
    Equivalent > Vertical { width: 110; max-width: 96%; height: auto; max-height: 90%;
                            border: thick $primary; background: $surface; padding: 1 2; }
    Equivalent .what { color: $text-muted; margin-top: 1; }
    Equivalent .command { width: 1fr; height: auto; }
    Equivalent #eq-keys { color: $text-muted; margin-top: 1; }
    """

    def __init__(self, title: str, lines: list[tuple[str, str]], profile: str) -> None:
        super().__init__()
        self.title_text = title
        self.lines = lines
        self.profile = profile

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(safe_text(self.title_text, style="bold"))
            for what, command in self.lines:
                yield Static(Text(clean_line(what) + ":"), classes="what")
                # whole, folded at the edge: a command is never cut
                yield Static(safe_text(command, overflow="fold"), classes="command")
            yield Static("y copy all  ·  Esc, q or e close", id="eq-keys", markup=False)

    def action_copy(self) -> None:
        copy_text(self.app, "".join(f"# {what}\n{command}\n" for what, command in self.lines),
                  "the commands", self.profile)
