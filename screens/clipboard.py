"""Copy text for the operator: OSC 52 when the terminal takes it, and a file whose path is shown."""
from __future__ import annotations

import asyncio

from console.clip import osc52_allowed, save_clip


def copy_text(app, text: str, what: str, profile: str) -> None:
    """Send `text` to the clipboard (OSC 52) when allowed, save it to a file, and say where it went."""

    async def save() -> None:
        try:
            path = await asyncio.to_thread(save_clip, profile, text)
        except OSError as exc:
            app.notify(f"✖ could not save the copy: {exc}", severity="error", timeout=5)
            return
        if osc52_allowed():
            app.copy_to_clipboard(text)
            app.notify(f"copied {what} to the clipboard (OSC 52); also in {path}", timeout=5)
        else:
            app.notify(f"copied {what} to {path} (this terminal takes no OSC 52)", timeout=5)

    app.run_worker(save(), group="clipboard")
