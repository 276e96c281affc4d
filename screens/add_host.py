"""Add a host from the console: a small form for `profiles add`, then trust its key, then check it.

Enter on the last field (or the Add button) saves the profile; the host's key
fingerprint is then shown for a y/n answer, and a check says whether it is
reachable and how many GPUs it has. The dialog closes with the new profile's
name, which the host switcher opens.
"""
from __future__ import annotations

import asyncio

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from .dialog import Dialog

from console.hosts.setup import SetupError, new_ssh_profile, trust_host_key

from .confirm import Confirm

FIELDS = (  # id, label, placeholder
    ("name", "name", "rtx-box"),
    ("target", "ssh target", "user@10.1.230.174[:22] or a ~/.ssh/config Host alias"),
    ("identity", "identity file (optional)", "~/.ssh/id_ed25519 (default: agent / ~/.ssh/config)"),
    ("scripts", "launch scripts dir (optional)", "~/scripts"),
    ("url", "server URL (optional)", "http://127.0.0.1:30000"),
)


class AddHost(Dialog[str | None]):
    BINDINGS = [Binding("escape", "dismiss(None)", "cancel")]
    DEFAULT_CSS = """
    AddHost { align: center middle; }
    AddHost > Vertical { width: 80; max-width: 96%; height: auto; max-height: 95%;
                         border: round $accent; background: $surface; padding: 0 1; }
    AddHost Label { color: $text-muted; }
    AddHost Input { width: 1fr; }
    AddHost #ah-status { height: auto; margin-top: 1; }
    AddHost Horizontal { height: auto; margin-top: 1; }
    AddHost Button { margin-right: 2; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.added: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Add a host", style="bold"))
            for key, label, placeholder in FIELDS:
                yield Label(label)
                yield Input(id=f"ah-{key}", placeholder=placeholder, compact=True)
            yield Static("Tab next field · Enter add · Esc cancel", id="ah-status")
            with Horizontal():
                yield Button("Add (Enter)", id="ah-add", variant="primary")
                yield Button("Close (Esc)", id="ah-close")

    def on_mount(self) -> None:
        self.query_one("#ah-name", Input).focus()

    def _say(self, text: str, style: str = "") -> None:
        self.query_one("#ah-status", Static).update(Text(text, style=style))

    def values(self) -> dict[str, str]:
        return {key: self.query_one(f"#ah-{key}", Input).value for key, _, _ in FIELDS}

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._add()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ah-add":
            self._add()
        else:
            self.dismiss(self.added)

    @work(exclusive=True, group="add-host")
    async def _add(self) -> None:
        if self.added:
            self.dismiss(self.added)
            return
        v = self.values()
        try:
            profile = await asyncio.to_thread(new_ssh_profile, v["name"], v["target"], v["identity"],
                                              v["scripts"], v["url"])
        except (SetupError, OSError) as exc:
            self._say(f"✖ {exc}", "red")
            return
        self.added = profile.name
        self._say(f"saved {profile.name} ({profile.target}); asking it for its host key …")
        from console.hosts import HostError, fetch_host_key

        try:
            target, key = await fetch_host_key(profile)
        except HostError as exc:
            self._say(f"saved {profile.name}, but its host key could not be fetched: {exc}", "yellow")
            return
        fingerprint = key.get_fingerprint()
        trusted = await self.app.push_screen_wait(Confirm(
            f"Trust {target.where}?", [f"{key.get_algorithm()} key {fingerprint}",
                                      "Compare it with the host's own key before you say yes."], "Trust"))
        if not trusted:
            self._say(f"saved {profile.name}; its key is not trusted, so it cannot connect yet "
                      f"(`gpudeck profiles trust {profile.name}` later)", "yellow")
            return
        await asyncio.to_thread(trust_host_key, target.key_name, key)
        self._say(f"trusted {fingerprint}; checking {profile.name} …")
        from console.hosts.probe import check

        result = await check(profile)
        if result.reachable:
            gpus = f"{result.gpu_count} GPU(s)" if result.gpu_count is not None else (result.gpu_note or "GPUs unknown")
            self._say(f"✔ {profile.name}: reachable in {result.latency_ms:.0f} ms · {result.kernel} · {gpus}"
                      "   Enter opens it", "green")
        else:
            self._say(f"✖ {profile.name}: unreachable ({result.error_kind}): {result.error}", "red")
