"""Pick an earlier run of this profile to compare with."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .dialog import Dialog

from console.safe_text import safe_text
from console.store.runs import run_line


class PickRun(Dialog[str | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "cancel")]
    DEFAULT_CSS = """
    PickRun { align: center middle; }
    PickRun > Vertical { width: 100; height: auto; max-height: 24; border: thick $primary;
                         background: $surface; padding: 1 2; }
    """

    def __init__(self, runs: list[dict], title: str = "Compare with which run?") -> None:
        super().__init__()
        self.runs = runs
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"))
            yield OptionList(*[Option(safe_text(run_line(r)), id=r["path"]) for r in self.runs])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
