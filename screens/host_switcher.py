"""The host switcher: every profile with its live chip; Enter opens one."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .dialog import Dialog

from console.safe_text import safe_text

from widgets.host_chips import Chip, chip_text


class HostSwitcher(Dialog[str | None]):
    BINDINGS = [Binding("escape,q,h", "dismiss(None)", "close"), Binding("a", "add_host", "add host")]
    DEFAULT_CSS = """
    HostSwitcher { align: center middle; }
    HostSwitcher > Vertical { width: 90; height: auto; max-height: 80%; border: round $accent; background: $surface; padding: 0 1; }
    HostSwitcher OptionList { height: auto; max-height: 30; }
    """

    def __init__(self, chips: list[Chip], errors: list[str]) -> None:
        super().__init__()
        self.chips = chips
        self.errors = errors

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Hosts[/b]  ↑↓ choose · Enter open · a add a host · Esc close")
            options = []
            for chip in self.chips:
                options.append(Option(chip_text(chip, full=True), id=chip.name))
            yield OptionList(*options, id="hosts")
            for line in self.errors:
                yield Static(Text.assemble(("✖ ", "red"), safe_text(line, newlines=True)))

    def on_mount(self) -> None:
        hosts = self.query_one(OptionList)
        for index, chip in enumerate(self.chips):
            if chip.current:
                hosts.highlighted = index

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_add_host(self) -> None:
        from .add_host import AddHost

        def added(name: str | None) -> None:
            if name:
                self.dismiss(name)  # the app adds it to the fleet and opens it

        self.app.push_screen(AddHost(), added)
