"""Browse every waiting suggestion, not only the first: arrows move, Enter accepts, n dismisses.

The list stays open while the operator works through it; the pane does the board
edits (it owns the board) and hands back the suggestions still waiting.
"""
from __future__ import annotations

from typing import Awaitable, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .dialog import Dialog

from console.safe_text import append_safe

from profiles.task_model import PRIORITIES
from profiles.task_suggestion import Suggestion

Edit = Callable[[str], Awaitable[list[Suggestion]]]


def _option(s: Suggestion) -> Option:
    line = Text(f"{s.priority:<6} ", style="yellow" if s.priority != "low" else "grey62")
    append_safe(line, s.text)
    stamp = s.created[:16].replace("T", " ") if s.created else ""
    if stamp and stamp[11:] not in s.text:  # the time once: a crash's suggestion names its time already
        append_safe(line, f"  ({stamp})", "grey62")
    return Option(line, id=s.key)


def in_order(suggestions: list[Suggestion]) -> list[Suggestion]:
    """Highest priority first, then the newest: the list reads as the board sorts its tasks."""
    rank = {p: i for i, p in enumerate(PRIORITIES)}  # high first
    newest_first = sorted(suggestions, key=lambda s: s.created or "", reverse=True)
    return sorted(newest_first, key=lambda s: rank.get(s.priority, len(rank)))


class SuggestionList(Dialog[None]):
    # q closes the list as Esc does; it quits only from a tab
    BINDINGS = [Binding("escape", "dismiss(None)", "close"), Binding("q", "dismiss(None)", "close", show=False),
                Binding("n", "dismiss_one", "dismiss"),
                Binding("enter", "accept_one", "accept", show=False)]
    DEFAULT_CSS = """
    SuggestionList { align: center middle; }
    SuggestionList > Vertical { width: 110; max-width: 96%; height: auto; max-height: 90%;
                                border: thick $primary; background: $surface; padding: 0 1; }
    SuggestionList OptionList { height: auto; max-height: 20; }
    SuggestionList #sl-keys { color: $text-muted; }
    """

    def __init__(self, suggestions: list[Suggestion], accept: Edit, dismiss: Edit, readonly: bool) -> None:
        super().__init__()
        self.suggestions = in_order(suggestions)
        self.accept = accept
        self.dismiss_key = dismiss
        self.readonly = readonly

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"✚ {len(self.suggestions)} suggested", style="bold green"), id="sl-title")
            yield OptionList(*[_option(s) for s in self.suggestions])
            keys = "↑↓ move · Esc close" if self.readonly else "↑↓ move · Enter accept · n dismiss · Esc close"
            yield Static(keys, id="sl-keys", markup=False)

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def _highlighted(self) -> str | None:
        options = self.query_one(OptionList)
        if options.highlighted is None or not self.suggestions:
            return None
        return options.get_option_at_index(options.highlighted).id

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.run_worker(self._edit(self.accept, event.option.id), exclusive=True)

    async def action_accept_one(self) -> None:
        key = self._highlighted()
        if key is not None:
            await self._edit(self.accept, key)

    async def action_dismiss_one(self) -> None:
        key = self._highlighted()
        if key is not None:
            await self._edit(self.dismiss_key, key)

    async def _edit(self, edit: Edit, key: str | None) -> None:
        if key is None or self.readonly:
            return
        options = self.query_one(OptionList)
        at = options.highlighted or 0
        self.suggestions = in_order(await edit(key))
        if not self.suggestions:
            self.dismiss(None)
            return
        options.clear_options()
        options.add_options([_option(s) for s in self.suggestions])
        options.highlighted = min(at, len(self.suggestions) - 1)
        self.query_one("#sl-title", Static).update(Text(f"✚ {len(self.suggestions)} suggested", style="bold green"))
