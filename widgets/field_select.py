"""A drop-down that owns every printable key while it has the focus, as a text field does.

Textual's Select lets a letter it does not use fall through to the tab and the app, so
`q` on a focused drop-down quit the console and `s` stopped a sweep. Here a letter opens
the list and searches it; Esc leaves the drop-down, and only then do letters act again.

It can carry its label as the title of its top border, as the Bench form's text fields do.
"""
from __future__ import annotations

from textual import events
from textual.widgets import Select


class FieldSelect(Select):
    def __init__(self, *args, title: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._title = title

    def on_mount(self) -> None:
        if self._title:  # the label in the top border of the closed drop-down, as a text field has it
            self.query_one("SelectCurrent").border_title = self._title

    def check_consume_key(self, key: str, character: str | None = None) -> bool:
        return character is not None and character.isprintable() and character != " "

    async def _on_key(self, event: events.Key) -> None:
        if event.character is not None and event.is_printable and event.character != " " and not self.expanded:
            event.stop()
            event.prevent_default()
            self.expanded = True  # the list opens; what is typed next searches it
