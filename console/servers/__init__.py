"""Inference servers on a host: launch configs, detached lifecycle, logs, crashes and their triage.

- `launch/`   launch scripts parsed without running them, and the flags a running server reports
- `configs`   the launch scripts a profile names or its scripts_dir holds
- `records`   what gpudeck remembers about each launch (for re-attach after a restart)
- `lifecycle` launch detached, poll state, readiness, clean kill, adopt
- `signals`   signal a server and only the server
- `launch_permit` a file a launch needs to start its server, when the console names one (the demo)
- `monitor`   one launched server followed: log, readiness, end, and why it ended
- `unreached` a live launch whose host did not answer: unknown, never taken for ended
- `logtail`   follow a log by byte offset through the Host, resuming after drops
- `procs`     inference processes, ports and GPU memory already in use on the host
- `owners`    which launch config owns a GPU process
- `triage/`   why a server died, read from its log (rules in `triage/rules.toml`)
- `crashes`   crash records as plain documents (the typed store is `console.store.crashes`)
- `settle_gate` whether a CLI command must first settle a profile's finished launches (file reads only)
"""
