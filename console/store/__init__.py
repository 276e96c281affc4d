"""The typed store: one reader and one writer per kind of saved record.

    runs/<id>.json        RunDoc (LevelResult, LevelStatus)       console.store.runs
    crashes/<id>.json     CrashRecord                              console.store.crashes
    servers/<id>.json     LaunchRecord                             console.store.launches
    campaigns/<id>/state.json  CampaignState (Cell)               console.store.campaigns
    tasks.toml            BoardState (Task, Suggestion; links use the ids above)  console.store.tasks

Beside the records: `scan` (what every reader returns, and the one loop that
reads a folder of record files into it), `files` (the bounded
read), `task_board` (the editing session: every edit merged and saved under
the board's lock), `measured` (which run a roofline comparison reads) and `suggest`
(records turned into task suggestions).

Every reader returns a `Scan`: the records it could read and one `Unreadable`
line per file it could not. Whoever shows those lines passes them through
`scan.first_time` so the operator reads each one once per console. Launch,
crash, campaign and task records are read through `files.read_capped` (a regular
file under a size cap), so a FIFO or a huge file is a line, not a hang.
"""
from .scan import Scan, Unreadable

__all__ = ["Scan", "Unreadable"]
