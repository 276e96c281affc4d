"""The console's tabs, in order: id, title, module and class of each tab body.

Its own module so the app, the command palette and the keys panel all read the
one list without importing each other.
"""
from __future__ import annotations

# (tab id, title, module, class); the digit that opens a tab is its place here
TABS = [
    ("gpus", "GPUs", "screens.gpus_pane", "GPUsPane"),
    ("server", "Server", "screens.server_pane", "ServerPane"),
    ("bench", "Bench", "screens.bench_pane", "BenchPane"),
    ("roofline", "Roofline", "screens.roofline_pane", "RooflinePane"),
    ("tasks", "Tasks", "screens.tasks_pane", "TasksPane"),
    ("campaign", "Campaign", "screens.campaign_pane", "CampaignPane"),
]


def tab_digit(tab_id: str) -> int:
    """The digit key that opens the tab (1 for the first)."""
    return next(i for i, t in enumerate(TABS, start=1) if t[0] == tab_id)
