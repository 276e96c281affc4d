"""A tiny app that holds only the Tasks pane, for Pilot and snapshot tests."""
from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Footer

from console.session import HostSession
from profiles import store
from screens.tasks_pane import TasksPane


class TasksApp(App):
    def __init__(self, profile: str = "local", readonly: bool = False) -> None:
        super().__init__()
        self.profile_name = profile
        self.readonly = readonly
        self.summaries: list[str] = []

    def compose(self) -> ComposeResult:
        yield TasksPane(id="pane-tasks")
        yield Footer()

    async def on_mount(self) -> None:
        session = HostSession.open(store.load(self.profile_name), readonly=self.readonly)
        pane = self.query_one(TasksPane)
        await pane.set_session(session)
        pane.query_one("#board").focus()

    def on_pane_summary(self, message: TasksPane.Summary) -> None:
        self.summaries.append(message.text)
