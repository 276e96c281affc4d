"""Textual's footer, changed only where the keys it shows change.

The stock Footer recomposes (unmounts and mounts every key, then restyles
them) each time the screen says its bindings may have changed: on every
focus move and every `refresh_bindings()`, several times per tab switch and
on each live update of a pane that refreshes its bindings. Most of those
leave the footer's keys as they were, and a tab switch mostly changes the
words of keys that stay in the same places. This one looks first, after
each burst of changes, and then rewrites the keys it already has in
place: each key takes the next widget the footer has of its kind (a key, a
group of keys), keys that went away are hidden and kept for the next tab
that shows them, and only a key with no such widget left is mounted. So a
tab switch restyles no key and, once each tab has been shown, mounts none. `shown_keys()` lists the keys on
show. (It still looks after the next
frame, as the stock footer does: looking sooner moved when the tab strip
settles, and the overflowing strip's picture with it.)
"""
from __future__ import annotations

from textual.compose import compose
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel

PALETTE = "-command-palette"
_STATE_CLASSES = frozenset({"-disabled"})  # what a key's update sets itself, not part of its shape


def _children(widget: Widget) -> list[Widget]:
    """A mounted widget's children, or a composed (not yet mounted) one's."""
    return list(widget.children) if widget.is_attached else list(widget._pending_children)


def _shape(widget: Widget) -> tuple:
    """What must be equal for one widget to be rewritten into another."""
    return (type(widget), frozenset(widget.classes) - _STATE_CLASSES,
            tuple(_shape(child) for child in _children(widget)))


def _on_show(widget: Widget, footer: Widget) -> bool:
    """Whether a widget in the footer is on show: neither it nor a group around it kept hidden."""
    while widget is not footer:
        if not widget.display:
            return False
        widget = widget.parent   # type: ignore[assignment]
    return True


def _hide(widgets: list[Widget]) -> None:
    for widget in widgets:
        if widget.display:
            widget.display = False


def _rewrite(old: Widget, new: Widget) -> None:
    """Give the mounted `old` what the composed `new` shows (both of one shape)."""
    if isinstance(old, FooterKey):
        now = (new.key, new.key_display, new.description, new.action, new._disabled)
        if (old.key, old.key_display, old.description, old.action, old._disabled) != now:
            old.key, old.key_display, old.description, old.action, old._disabled = now
            old.set_class(new._disabled, "-disabled")
            old.refresh(layout=True)
        if old.tooltip != new.tooltip:
            old.tooltip = new.tooltip
    elif isinstance(old, FooterLabel):
        if old.content != new.content:
            old.update(new.content)
    for old_child, new_child in zip(_children(old), _children(new)):
        _rewrite(old_child, new_child)


class SteadyFooter(Footer):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # the keys known when it is mounted are drawn in the first frame, not only after a focus move
        self.set_reactive(Footer._bindings_ready, True)
        self._drawn: tuple | None = None  # the keys the footer was last built with
        self._updating = False            # while the keys are being rewritten

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
        # Every change asks for a look (a look that finds the keys unchanged costs little). No
        # "one already asked" flag: the look is queued on whichever screen is on top when it is
        # handed over, and a confirmation dialog that closes takes its queue with it; a flag
        # left set then would freeze the footer on the old tab's keys for good.
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._rebuild_if_changed)

    async def _rebuild_if_changed(self) -> None:
        if not self.is_attached:
            return
        shown = self._shown_keys()
        if shown == self._drawn:
            return
        self._drawn = shown
        self._updating = True
        try:
            await self._update_keys()
        finally:
            self._updating = False

    def shown_keys(self) -> list[FooterKey]:
        """The keys on show, in order (not those kept hidden for a tab with more)."""
        return [key for key in self.query(FooterKey) if _on_show(key, self)]

    def shows_current_keys(self) -> bool:
        """Whether the footer is built with the keys the focus gives now (and is not mid-rewrite)."""
        return not self._updating and self._drawn == self._shown_keys()

    async def _update_keys(self) -> None:
        """Rewrite the keys in place; mount only a key of a kind no kept widget is left for, hide the rest."""
        old = [w for w in self.children if not w.has_class("-textual-system")]
        new = compose(self)
        old_palette = [w for w in old if w.has_class(PALETTE)]
        new_palette = [w for w in new if w.has_class(PALETTE)]
        if len(old_palette) != len(new_palette):
            await self.recompose()
            return
        old_body = [w for w in old if not w.has_class(PALETTE)]
        new_body = [w for w in new if not w.has_class(PALETTE)]
        async with self.batch():
            for old_widget, new_widget in zip(old_palette, new_palette):
                _rewrite(old_widget, new_widget)
            # Each new key takes the next kept widget of its shape, in order; the widgets passed
            # over are hidden, and a key with no such widget left is mounted where it goes.
            at, shapes = 0, [_shape(w) for w in old_body]
            for new_widget in new_body:
                shape = _shape(new_widget)
                found = next((k for k in range(at, len(old_body)) if shapes[k] == shape), None)
                if found is None:
                    if not self.is_attached:
                        return
                    before = old_body[at] if at < len(old_body) else old_palette[0] if old_palette else None
                    await self.mount(new_widget, before=before)
                    continue
                _hide(old_body[at:found])
                _rewrite(old_body[found], new_widget)
                if not old_body[found].display:
                    old_body[found].display = True
                at = found + 1
            _hide(old_body[at:])
