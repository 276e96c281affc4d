"""Textual's footer, rebuilt only when the keys it shows change.

The stock Footer recomposes (unmounts and mounts every key, then restyles
them) each time the screen says its bindings may have changed: on every
focus move and every `refresh_bindings()`, several times per tab switch and
on each live update of a pane that refreshes its bindings. Most of those
leave the footer's keys as they were. This one looks first, and rebuilds at
most once per refresh, and only when the shown keys differ.
"""
from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class SteadyFooter(Footer):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # the keys known when it is mounted are drawn in the first frame, not only after a focus move
        self.set_reactive(Footer._bindings_ready, True)
        self._drawn: tuple | None = None  # the keys the footer was last built with
        self._pending = False

    def _shown_keys(self) -> tuple:
        """What compose would draw: the shown bindings with their state, and the palette key."""
        active = self.screen.active_bindings
        keys = tuple((binding, enabled, tooltip) for _node, binding, enabled, tooltip in active.values()
                     if binding.show)
        palette = active.get(self.app.COMMAND_PALETTE_BINDING)
        return keys, (palette.binding, palette.enabled) if palette else None, self.show_command_palette

    def compose(self):
        # Each key is bound to the footer's `compact` and so styled twice as it mounts (the bound
        # value is written over the key's own default); the footer never changes `compact`, so
        # each key gets the footer's value and class up front and no binding.
        # (The palette key has no binding and keeps its own compact style.)
        for widget in super().compose():
            if isinstance(widget, FooterKey) and getattr(widget, "_reactive_connect", None):
                widget._reactive_connect = None
                widget.set_reactive(FooterKey.compact, self.compact)
                widget.set_class(self.compact, "-compact", update=False)
            yield widget

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._pending:
            self._pending = True
            self.call_after_refresh(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        shown = self._shown_keys()
        if shown == self._drawn:
            return
        self._drawn = shown
        await self.recompose()
