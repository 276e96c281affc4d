"""A yes/no question whose safe answer is the default: Cancel has the focus.

`y` answers yes and `n` or Esc no, from anywhere in the dialog; the keys are
written on the buttons and in a hint line, so nobody has to guess them.
Every line is shown whole, wrapped at word boundaries (a command is never cut).
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Static

from .dialog import Dialog

from console.safe_text import safe_text


class Confirm(Dialog[bool]):
    # q closes the top layer as Esc does (answered no); it quits only from a tab
    BINDINGS = [Binding("escape,n", "dismiss(False)", "cancel"), Binding("q", "dismiss(False)", "cancel", show=False),
                Binding("y", "dismiss(True)", "yes")]
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > Vertical { width: 100; max-width: 96%; height: auto; max-height: 90%;
                         border: thick $error; background: $surface; padding: 1 2; }
    Confirm .line { width: 1fr; height: auto; }
    Confirm #keys { color: $text-muted; margin-top: 1; }
    Confirm Horizontal { height: auto; margin-top: 1; }
    Confirm Button { margin-right: 2; }
    """

    def __init__(self, title: str, lines: list[str], confirm_label: str = "Yes") -> None:
        super().__init__()
        self.title_text = title
        self.lines = lines
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(safe_text(self.title_text, style="bold"))  # titles name configs and pids
            for line in self.lines:
                yield Static(safe_text(line, newlines=True, overflow="fold"), classes="line")
            yield Static(f"y {self.confirm_label.lower()}  ·  n or Esc cancel  ·  Tab moves between the buttons",
                         id="keys", markup=False)
            with Horizontal():
                yield Button("Cancel (n)", id="cancel", variant="primary")
                yield Button(f"{self.confirm_label} (y)", id="confirm", variant="error")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm")
