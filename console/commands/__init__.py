"""One module per CLI command; each has `register(subparsers)`.

Every module listed below must exist. They import only argparse-level things at import time, so that
`gpudeck --help` stays fast; heavy imports happen inside the handlers.
"""

# The order here is the order in `gpudeck --help`.
COMMAND_MODULES = [
    "tui",
    "demo",
    "profiles",
    "gpus",
    "server",
    "triage",
    "bench",
    "campaign",
    "roofline",
    "tasks",
    "report",
    "sim",
]
