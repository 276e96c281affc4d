"""What the `?` panel lists: the tab on screen's keys first, grouped, then the keys that work everywhere.

Read from the panes' own bindings, so the panel can never list a key the tab
does not have; the read-only console leaves out what it removed.
"""
from __future__ import annotations

from textual.binding import Binding

from .palette import NAMES, key_label
from .tabs import TABS

EVERYWHERE = [
    ("Esc", "close the top layer, then leave a field"),
    ("1-6", "switch tab (the digit in its title)"),
    ("H", "switch or add a host"),
    ("?", "this panel"),
    ("ctrl+p", "find a command by name"),
    ("q", "quit"),
]
HIDDEN = {"help", "app.help", "field_enter"}  # the panel's own key is under "everywhere"; Enter in a field is the field's


def key_groups(app) -> list[tuple[str, list[tuple[str, str]]]]:
    tab_id = app.tabs.active if app.tabs is not None else ""
    title = next((t[1] for t in TABS if t[0] == tab_id), "")
    pane = app.panes.get(tab_id)
    groups: dict[str, list[tuple[str, str]]] = {}
    if pane is not None:
        named = getattr(pane, "KEY_GROUPS", {})
        for binding in pane.BINDINGS:
            if not isinstance(binding, Binding):
                continue
            action = binding.action.split("(")[0]
            if action in HIDDEN or binding.key == "escape" or (pane.readonly and action in pane.DESTRUCTIVE_ACTIONS):
                continue
            group = named.get(action, f"{title} tab")
            what = NAMES.get((tab_id, action), binding.description or action)
            row = (key_label(binding), what)
            if row not in groups.setdefault(group, []):
                groups[group].append(row)
    return [*groups.items(), ("Everywhere", EVERYWHERE)]
