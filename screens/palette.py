"""Every key of every tab in the command palette (ctrl+p), so an action can be found by name.

Each binding of each pane (and of the app) becomes a command "Tab: what it
does (key)". Choosing one opens that tab and runs the action there, exactly
as the key would; actions a read-only console removes are not offered.
"""
from __future__ import annotations

from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from .tabs import TABS

# clearer names than the footer's short labels, where the short one says too little out of context
NAMES = {
    ("gpus", "sort_processes"): "sort the process list (memory, CPU, RSS, pid, name)",
    ("server", "launch"): "launch the selected config",
    ("server", "kill"): "kill the running server",
    ("server", "diff"): "diff flags with another config",
    ("server", "adopt"): "adopt a server not started here",
    ("server", "equivalent"): "show the commands that launch the selected config",
    ("bench", "equivalent"): "show the gpudeck bench command of the setup",
    ("server", "jump"): "jump to the crash line",
    ("server", "reload"): "reload configs",
    ("server", "next_match"): "next search match",
    ("server", "prev_match"): "previous search match",
    ("server", "copy_line"): "copy the current log line",
    ("server", "copy_excerpt"): "copy the crash excerpt",
    ("server", "numbers"): "line numbers on/off",
    ("server", "follow_end"): "follow the end of the log",
    ("server", "search"): "search the log",
    ("server", "filter"): "filter the log",
    ("bench", "start"): "run sweep",
    ("bench", "stop"): "stop the sweep",
    ("bench", "toggle_form"): "show/hide the setup form",
    ("bench", "models"): "reload models from /v1/models",
    ("gpus", "toggle_fleet"): "fleet view on/off",
    ("gpus", "open_host"): "open host (from the fleet view)",
    ("roofline", "toggle_whatif"): "what-if editor on/off",
    ("tasks", "report"): "write report",
    ("tasks", "move_down"): "move task down",
    ("tasks", "move_up"): "move task up",
    ("tasks", "cycle"): "cycle task status",
    ("tasks", "raise_priority"): "raise task priority",
    ("tasks", "lower_priority"): "lower task priority",
    ("tasks", "toggle_done"): "hide/show done tasks",
    ("tasks", "accept"): "accept the suggested task",
    ("tasks", "dismiss"): "dismiss the suggested task",
    ("tasks", "add"): "add a task",
    ("tasks", "edit"): "edit the task",
    ("tasks", "delete"): "delete the task",
    ("tasks", "filter"): "filter tasks",
}
SKIP = {"close_layer", "close_inputs", "cursor", "back", "clear_field", "field_enter"}  # context keys that mean nothing from the palette


def key_label(binding: Binding) -> str:
    if binding.key_display:
        return binding.key_display
    key = binding.key.split(",")[0]
    return {"slash": "/", "number_sign": "#", "plus": "+", "minus": "-", "space": "space",
            "question_mark": "?", "end": "End", "escape": "Esc", "enter": "Enter"}.get(key, key)


def commands(app) -> list[tuple[str, str, object]]:
    """(text, help, callback) for each pane's and the app's keys, in tab order."""
    out = []
    for tab_id, title, _, _ in TABS:
        pane = app.panes.get(tab_id)
        if pane is None:
            continue
        for binding in pane.BINDINGS:
            if not isinstance(binding, Binding):
                continue
            action = binding.action.split("(")[0]
            if action in SKIP or pane.check_action(action, ()) is False:
                continue
            name = NAMES.get((tab_id, action), binding.description or action)
            out.append((f"{title}: {name} ({key_label(binding)})", f"key {key_label(binding)} on the {title} tab",
                        partial(app.run_pane_action, tab_id, binding.action)))
    for binding in app.BINDINGS:
        if isinstance(binding, Binding) and binding.action.split("(")[0] in ("hosts", "quit"):
            name = {"hosts": "switch host", "quit": "quit"}[binding.action]
            out.append((f"{name} ({key_label(binding)})", f"key {key_label(binding)} anywhere",
                        partial(app.run_action, binding.action)))
    return out


class KeysProvider(Provider):
    """Commands for every key the console has."""

    async def discover(self) -> Hits:
        for text, help_text, callback in commands(self.app):
            yield DiscoveryHit(text, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, help_text, callback in commands(self.app):
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback, help=help_text)


def fleet_key_groups(app) -> list[tuple[str, list[tuple[str, str]]]]:
    """The fleet view's keys for its `?` panel: the hosts table's, then the drill-in's."""
    hosts = [(key_label(b), b.description) for b in app.BINDINGS
             if isinstance(b, Binding) and b.action not in ("help", "close_help", "quit")]
    from widgets.fleet_hosts import FleetHostsTable

    moving = [(key_label(b), b.description) for b in FleetHostsTable.BINDINGS if isinstance(b, Binding)]
    return [("Fleet", hosts),
            ("Moving over the hosts", moving),
            ("A host's GPUs (Enter)", [("Esc", "back to the fleet")]),
            ("Everywhere", [("?", "this panel"), ("ctrl+p", "find a command by name"), ("q", "quit")])]


class FleetKeysProvider(Provider):
    """The fleet view's keys as commands (ctrl+p)."""

    def _commands(self):
        for binding in self.app.BINDINGS:
            if isinstance(binding, Binding) and binding.action not in ("close_help", "clear_filter"):
                text = f"{binding.description} ({key_label(binding)})"
                yield text, partial(self.app.run_action, binding.action)

    async def discover(self) -> Hits:
        for text, callback in self._commands():
            yield DiscoveryHit(text, callback)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, callback in self._commands():
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), callback)
