"""The Tasks pane in the shared host app, for Pilot and snapshot tests."""
from __future__ import annotations

from console.session import HostSession
from profiles import store
from screens.tasks_pane import TasksPane
from tests.harness import HostApp


class TasksApp(HostApp):
    def __init__(self, profile: str = "local", readonly: bool = False) -> None:
        session = HostSession.open(store.load(profile), readonly=readonly)
        super().__init__(TasksPane(id="pane-tasks"), session, focus="#board")
